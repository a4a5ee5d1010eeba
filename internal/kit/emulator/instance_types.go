package emulator

import (
	"maps"
	"slices"
	"strconv"
)

// instanceType is what the emulator knows of an instance type: its
// network limits as DescribeInstanceTypes' networkInfo reports them.
type instanceType struct {
	name             string
	maxENIs          int
	ipv4PerInterface int
	ipv6PerInterface int
	ipv6Supported    bool
	efaSupported     bool
	// cards holds each network card's interface limit, by card index.
	cards []int
}

// card returns the interface limit of a network card and whether the
// type has it.
func (t instanceType) card(index int) (int, bool) {
	if index < 0 || index >= len(t.cards) {
		return 0, false
	}
	return t.cards[index], true
}

// oneCard is a type of one network card taking all its interfaces,
// with as many IPv6 addresses per interface as IPv4 (true of current
// types), without EFA.
func oneCard(name string, maxENIs, ipv4 int) instanceType {
	return instanceType{name: name, maxENIs: maxENIs, ipv4PerInterface: ipv4, ipv6PerInterface: ipv4,
		ipv6Supported: true, cards: []int{maxENIs}}
}

func defaultInstanceTypes() map[string]instanceType {
	// Figures from the EC2 instance type documentation (MaximumNetworkInterfaces,
	// Ipv4AddressesPerInterface, network cards, EFA support).
	table := []instanceType{
		oneCard("t3.nano", 2, 2), oneCard("t3.micro", 2, 2), oneCard("t3.small", 3, 4), oneCard("t3.medium", 3, 6),
		oneCard("t3.large", 3, 12), oneCard("t3.xlarge", 4, 15), oneCard("t3.2xlarge", 4, 15),
		oneCard("m5.large", 3, 10), oneCard("m5.xlarge", 4, 15), oneCard("m5.2xlarge", 4, 15), oneCard("m5.4xlarge", 8, 30),
		oneCard("m5.8xlarge", 8, 30), oneCard("m5.12xlarge", 8, 30), oneCard("m5.16xlarge", 15, 50), oneCard("m5.24xlarge", 15, 50),
		oneCard("m6i.large", 3, 10), oneCard("m6i.xlarge", 4, 15), oneCard("m6i.2xlarge", 4, 15), oneCard("m6i.4xlarge", 8, 30),
		oneCard("c5.large", 3, 10), oneCard("c5.xlarge", 4, 15), oneCard("c5.2xlarge", 4, 15), oneCard("c5.4xlarge", 8, 30),
		oneCard("c5.9xlarge", 8, 30), withEFA(oneCard("c5n.18xlarge", 15, 50)), oneCard("r5.large", 3, 10), oneCard("r5.xlarge", 4, 15),
		// Types with several network cards: interfaces are counted per card.
		{name: "c6in.32xlarge", maxENIs: 16, ipv4PerInterface: 50, ipv6PerInterface: 50, ipv6Supported: true, efaSupported: true, cards: []int{8, 8}},
		{name: "p4d.24xlarge", maxENIs: 60, ipv4PerInterface: 50, ipv6PerInterface: 50, ipv6Supported: true, efaSupported: true, cards: []int{15, 15, 15, 15}},
	}
	m := make(map[string]instanceType, len(table))
	for _, t := range table {
		m[t.name] = t
	}
	return m
}

func withEFA(t instanceType) instanceType {
	t.efaSupported = true
	return t
}

// fromSpec is a World's instance type; what it leaves out takes the
// values of a current single-card type without EFA.
func fromSpec(t InstanceTypeSpec) instanceType {
	per := t.IPv4AddressesPerInterface
	if per == 0 {
		per = 10
	}
	x := oneCard(t.Name, t.MaximumNetworkInterfaces, per)
	if t.IPv6AddressesPerInterface > 0 {
		x.ipv6PerInterface = t.IPv6AddressesPerInterface
	}
	if t.IPv6Supported != nil {
		x.ipv6Supported = *t.IPv6Supported
	}
	x.efaSupported = t.EFASupported
	if len(t.NetworkCards) > 0 {
		x.cards = slices.Clone(t.NetworkCards)
	}
	return x
}

type describeInstanceTypesResponse struct {
	respMeta
	InstanceTypes []xInstanceType `xml:"instanceTypeSet>item"`
	NextToken     string          `xml:"nextToken,omitempty"`
}

// xInstanceType is an instance type as DescribeInstanceTypes shows it
// (networkInfo only).
type xInstanceType struct {
	InstanceType string       `xml:"instanceType"`
	NetworkInfo  xNetworkInfo `xml:"networkInfo"`
}

type xNetworkInfo struct {
	MaximumNetworkInterfaces  int            `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards       int            `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   int            `xml:"defaultNetworkCardIndex"`
	NetworkCards              []xNetworkCard `xml:"networkCards>item"`
	IPv4AddressesPerInterface int            `xml:"ipv4AddressesPerInterface"`
	IPv6AddressesPerInterface int            `xml:"ipv6AddressesPerInterface"`
	IPv6Supported             bool           `xml:"ipv6Supported"`
	EFASupported              bool           `xml:"efaSupported"`
}

type xNetworkCard struct {
	NetworkCardIndex         int `xml:"networkCardIndex"`
	MaximumNetworkInterfaces int `xml:"maximumNetworkInterfaces"`
}

func (t instanceType) x() xInstanceType {
	x := xInstanceType{InstanceType: t.name, NetworkInfo: xNetworkInfo{
		MaximumNetworkInterfaces: t.maxENIs, MaximumNetworkCards: len(t.cards),
		IPv4AddressesPerInterface: t.ipv4PerInterface, IPv6AddressesPerInterface: t.ipv6PerInterface,
		IPv6Supported: t.ipv6Supported, EFASupported: t.efaSupported,
	}}
	for i, n := range t.cards {
		x.NetworkInfo.NetworkCards = append(x.NetworkInfo.NetworkCards, xNetworkCard{NetworkCardIndex: i, MaximumNetworkInterfaces: n})
	}
	return x
}

// instanceTypeFields are the DescribeInstanceTypes filters the emulator
// knows.
func instanceTypeFields(t instanceType) fieldFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{t.name}, true
		case "network-info.maximum-network-interfaces":
			return []string{strconv.Itoa(t.maxENIs)}, true
		case "network-info.ipv4-addresses-per-interface":
			return []string{strconv.Itoa(t.ipv4PerInterface)}, true
		case "network-info.ipv6-addresses-per-interface":
			return []string{strconv.Itoa(t.ipv6PerInterface)}, true
		case "network-info.ipv6-supported":
			return []string{strconv.FormatBool(t.ipv6Supported)}, true
		case "network-info.efa-supported":
			return []string{strconv.FormatBool(t.efaSupported)}, true
		case "network-info.maximum-network-cards":
			return []string{strconv.Itoa(len(t.cards))}, true
		}
		return nil, false
	}
}

func describeInstanceTypes(w *world, p params, _ callEnv) (response, *apiError) {
	filters, err := p.filters()
	if err != nil {
		return nil, err
	}
	if err := validateFilters(filters, instanceTypeFields(instanceType{})); err != nil {
		return nil, err
	}
	names := p.list("InstanceType")
	if len(names) == 0 {
		names = slices.Collect(maps.Keys(w.instanceTypes))
	}
	slices.Sort(names)
	type entry struct {
		seq int64
		t   instanceType
	}
	var matched []entry
	for _, n := range names {
		t, ok := w.instanceTypes[n]
		if !ok {
			return nil, apiErr("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", n)
		}
		if ok, _ := matchAll(filters, instanceTypeFields(t)); ok {
			matched = append(matched, entry{seq: int64(len(matched) + 1), t: t})
		}
	}
	pg, next, err := page(matched, func(e entry) int64 { return e.seq }, p)
	if err != nil {
		return nil, err
	}
	resp := &describeInstanceTypesResponse{NextToken: next}
	for _, e := range pg {
		resp.InstanceTypes = append(resp.InstanceTypes, e.t.x())
	}
	return resp, nil
}
