// Package attachdefs keeps Multus NetworkAttachmentDefinitions in sync
// with the NodeENIs that ask for them (spec.multus.attachmentDefinition):
// one definition per listed namespace and resolved subnet, each owned by
// its NodeENI (wanted.go decides, as a pure function; the reconciler of
// controller.go writes, deletes and reports). It never writes over or
// deletes a definition it did not write.
package attachdefs

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// cniVersion of the generated configurations: the version ipvlan,
// macvlan, host-device, whereabouts and static all accept.
const cniVersion = "0.3.1"

// Definition is one NetworkAttachmentDefinition a NodeENI wants.
type Definition struct {
	Namespace string
	Name      string
	// SubnetID is the subnet whose interfaces it attaches pods to.
	SubnetID string
	// Config is spec.config: the CNI configuration, JSON.
	Config string
}

// Key is the definition's namespace/name.
func (d Definition) Key() string { return d.Namespace + "/" + d.Name }

// Wanted returns the definitions ne asks for: for each namespace listed,
// one per subnet of status.subnets, in their orders. None when it asks
// for none or its subnets are not resolved yet. An error says why the
// spec or a subnet cannot make a configuration; nothing is wanted then.
func Wanted(ne *v1alpha1.NodeENI) ([]Definition, error) {
	ad := attachmentDefinition(ne)
	if ad == nil {
		return nil, nil
	}
	if len(ne.Name) > validation.LabelValueMaxLength {
		// The definitions' label names the NodeENI.
		return nil, fmt.Errorf("the NodeENI's name is longer than %d characters, the most a label value holds: give it a shorter name", validation.LabelValueMaxLength)
	}
	subnets := ne.Status.Subnets
	base := ad.Name
	if base == "" {
		base = ne.Name
	}
	configs := make([]Definition, len(subnets))
	for i, s := range subnets {
		name := base
		if len(subnets) > 1 {
			name = base + "-" + s.ID
		}
		pods, err := podRange(ne, s.ID)
		if err != nil {
			return nil, err
		}
		cfg, err := config(name, ad, hostInterface(ne.Spec.InterfaceName, subnets, i), s, pods)
		if err != nil {
			return nil, fmt.Errorf("subnet %s: %w", s.ID, err)
		}
		configs[i] = Definition{Name: name, SubnetID: s.ID, Config: cfg}
	}
	out := make([]Definition, 0, len(ad.Namespaces)*len(configs))
	for _, ns := range ad.Namespaces {
		for _, d := range configs {
			d.Namespace = ns
			out = append(out, d)
		}
	}
	return out, nil
}

// attachmentDefinition is ne's spec.multus.attachmentDefinition, nil when
// unset.
func attachmentDefinition(ne *v1alpha1.NodeENI) *v1alpha1.AttachmentDefinitionSpec {
	if ne.Spec.Multus == nil {
		return nil
	}
	return ne.Spec.Multus.AttachmentDefinition
}

// hostInterface is the name the node agent gives the interface of
// subnets[i]: a node has one ENI per subnet of its zone, at consecutive
// device indexes in list order, the first named interfaceName and the
// k-th interfaceName + k.
func hostInterface(interfaceName string, subnets []v1alpha1.ResolvedSubnet, i int) string {
	k := 0
	for _, s := range subnets[:i] {
		if s.Zone == subnets[i].Zone {
			k++
		}
	}
	if k == 0 {
		return interfaceName
	}
	return interfaceName + strconv.Itoa(k)
}

// cniConfig is the plugin configuration; its field order is the JSON's,
// so equal inputs give byte-equal configurations.
type cniConfig struct {
	CNIVersion   string          `json:"cniVersion"`
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	Master       string          `json:"master,omitempty"`
	Device       string          `json:"device,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
	IPAM         ipamConfig      `json:"ipam"`
}

// ipamConfig is whereabouts' (one range inline, or ipRanges for dual
// stack) or static's (the type alone).
type ipamConfig struct {
	Type string `json:"type"`
	addressRange
	IPRanges []addressRange `json:"ipRanges,omitempty"`
}

// addressRange is one whereabouts range.
type addressRange struct {
	Range      string   `json:"range,omitempty"`
	RangeStart string   `json:"range_start,omitempty"`
	RangeEnd   string   `json:"range_end,omitempty"`
	Exclude    []string `json:"exclude,omitempty"`
}

// config is the CNI configuration of definition name for subnet s on
// host interface master.
func config(name string, ad *v1alpha1.AttachmentDefinitionSpec, master string, s v1alpha1.ResolvedSubnet, pods netip.Prefix) (string, error) {
	c := cniConfig{CNIVersion: cniVersion, Name: name, Type: ad.Type}
	switch ad.Type {
	case "", "ipvlan":
		c.Type, c.Master, c.Mode = "ipvlan", master, orDefault(ad.Mode, "l2")
	case "macvlan":
		c.Master, c.Mode = master, orDefault(ad.Mode, "bridge")
	case "host-device":
		c.Device = master
	default:
		return "", fmt.Errorf("type %q is not ipvlan, macvlan or host-device", ad.Type)
	}
	switch ad.IPAM {
	case "", "whereabouts":
		ipam, err := whereabouts(s, pods, ad.Exclude)
		if err != nil {
			return "", err
		}
		c.IPAM = ipam
	case "static":
		// Each pod names its address in its network selection ("ips").
		c.IPAM = ipamConfig{Type: "static"}
		c.Capabilities = map[string]bool{"ips": true}
	default:
		return "", fmt.Errorf("ipam %q is not whereabouts or static", ad.IPAM)
	}
	b, err := json.Marshal(c)
	return string(b), err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// podRange is the pods' IPv4 range reserved in subnet for ne (invalid
// when ne asks for none); an error while the reservation it asks for is
// not made yet.
func podRange(ne *v1alpha1.NodeENI, subnet string) (netip.Prefix, error) {
	if ne.Spec.Multus.PodAddressReservation == nil {
		return netip.Prefix{}, nil
	}
	for _, r := range ne.Status.PodAddressReservations {
		if r.SubnetID == subnet {
			p, err := netip.ParsePrefix(r.CIDR)
			if err != nil || !p.Addr().Is4() {
				return netip.Prefix{}, fmt.Errorf("the pods' range of subnet %s, %q, is not an IPv4 CIDR", subnet, r.CIDR)
			}
			return p.Masked(), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%w in subnet %s (condition %s)", errPodRangePending, subnet, v1alpha1.ConditionPodAddressesReserved)
}

// errPodRangePending: the NodeENI asks for a pods' range not reserved yet.
var errPodRangePending = errors.New("waiting for the pods' range to be reserved")

// whereabouts hands out the subnet's addresses but those AWS reserves,
// or, with a pods' range reserved (pods), that range's alone: one range
// for a single-stack subnet, ipRanges with both for a dual-stack one.
// Each exclude goes to the range of its family. The range stays the
// subnet's CIDR, so pods get the subnet's prefix and its router.
func whereabouts(s v1alpha1.ResolvedSubnet, pods netip.Prefix, exclude []string) (ipamConfig, error) {
	var ranges []addressRange
	for _, cidr := range []string{s.CIDR, s.IPv6CIDR} {
		if cidr == "" {
			continue
		}
		r, err := usableRange(cidr)
		if err != nil {
			return ipamConfig{}, err
		}
		if p := netip.MustParsePrefix(r.Range); pods.IsValid() && p.Addr().Is4() {
			if !p.Contains(pods.Addr()) || pods.Bits() < p.Bits() {
				return ipamConfig{}, fmt.Errorf("the pods' range %s is not inside the subnet's %s", pods, p)
			}
			r.RangeStart, r.RangeEnd = pods.Addr().String(), lastAddr(pods).String()
		}
		ranges = append(ranges, r)
	}
	if len(ranges) == 0 {
		return ipamConfig{}, fmt.Errorf("the subnet has no CIDR for whereabouts")
	}
	for _, e := range exclude {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return ipamConfig{}, fmt.Errorf("exclude %q is not a CIDR", e)
		}
		for i := range ranges {
			if netip.MustParsePrefix(ranges[i].Range).Addr().Is4() == p.Addr().Is4() {
				ranges[i].Exclude = append(ranges[i].Exclude, e)
			}
		}
	}
	if len(ranges) == 1 {
		return ipamConfig{Type: "whereabouts", addressRange: ranges[0]}, nil
	}
	return ipamConfig{Type: "whereabouts", IPRanges: ranges}, nil
}

// usableRange is cidr less what AWS reserves in every subnet, IPv4 or
// IPv6: its first four addresses and its last.
func usableRange(cidr string) (addressRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return addressRange{}, fmt.Errorf("CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	first := p.Addr()
	for range 4 {
		first = first.Next()
	}
	last := lastAddr(p).Prev()
	if !first.IsValid() || !last.IsValid() || last.Less(first) {
		return addressRange{}, fmt.Errorf("CIDR %s leaves no address after the five AWS reserves", p)
	}
	return addressRange{Range: p.String(), RangeStart: first.String(), RangeEnd: last.String()}, nil
}

// lastAddr is the last address of p (its host bits all set).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		// Bits of byte i outside the prefix.
		host := min(max(len(b)*8-p.Bits()-(len(b)-1-i)*8, 0), 8)
		b[i] |= 0xff >> (8 - host)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
