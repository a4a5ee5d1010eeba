package emulator

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

type describeNetworkInterfacesResponse struct {
	respMeta
	NetworkInterfaces []xNetworkInterface `xml:"networkInterfaceSet>item"`
	NextToken         string              `xml:"nextToken,omitempty"`
}

func (w *world) eniFields(n *eni) fieldFunc {
	return func(name string) ([]string, bool) {
		if f, ok := eniFieldTable[name]; ok {
			return f(w, n), true
		}
		return w.ownedFields(w.describedTags(&n.resource), name)
	}
}

// eniField gives an ENI's values for one DescribeNetworkInterfaces filter.
type eniField func(w *world, n *eni) []string

// eniFieldTable holds the ENI filters other than owner-id and the tags.
var eniFieldTable = map[string]eniField{
	"network-interface-id": func(_ *world, n *eni) []string { return []string{n.id} },
	"addresses.private-ip-address": func(_ *world, n *eni) []string {
		out := []string{n.primaryIP.String()}
		for _, a := range n.secondaryIPs {
			out = append(out, a.String())
		}
		return out
	},
	"addresses.primary": func(_ *world, n *eni) []string {
		out := []string{"true"}
		for range n.secondaryIPs {
			out = append(out, "false")
		}
		return out
	},
	"private-ip-address":          func(_ *world, n *eni) []string { return []string{n.primaryIP.String()} },
	"private-dns-name":            func(w *world, n *eni) []string { return []string{w.dnsName(n.primaryIP)} },
	"ipv6-addresses.ipv6-address": eniIPv6Addresses,
	"ipv6-address":                eniIPv6Addresses,
	"mac-address":                 func(_ *world, n *eni) []string { return []string{n.mac} },
	"subnet-id":                   func(_ *world, n *eni) []string { return []string{n.subnetID} },
	"vpc-id":                      func(_ *world, n *eni) []string { return []string{n.vpcID} },
	"availability-zone":           func(_ *world, n *eni) []string { return []string{n.az} },
	"availability-zone-id":        func(_ *world, n *eni) []string { return []string{azID(n.az)} },
	"source-dest-check":           func(_ *world, n *eni) []string { return []string{strconv.FormatBool(n.sourceDestCheck)} },
	"status":                      func(_ *world, n *eni) []string { return []string{n.status()} },
	"interface-type":              func(_ *world, n *eni) []string { return []string{n.interfaceType} },
	"description":                 func(_ *world, n *eni) []string { return []string{n.description} },
	"requester-managed":           func(_ *world, n *eni) []string { return []string{strconv.FormatBool(n.requesterManaged)} },
	"group-id":                    func(_ *world, n *eni) []string { return n.groups },
	"group-name": func(w *world, n *eni) []string {
		out := []string{}
		for _, g := range n.groups {
			if sg, ok := w.groups[g]; ok {
				out = append(out, sg.name)
			}
		}
		return out
	},
	"attachment.instance-id":       attachmentField(func(_ *world, a *attachment) string { return a.instanceID }),
	"attachment.instance-owner-id": attachmentField(func(w *world, _ *attachment) string { return w.accountID }),
	"attachment.device-index":      attachmentField(func(_ *world, a *attachment) string { return strconv.Itoa(a.deviceIndex) }),
	"attachment.status":            attachmentField(func(_ *world, a *attachment) string { return a.status }),
	"attachment.attachment-id":     attachmentField(func(_ *world, a *attachment) string { return a.id }),
	"attachment.delete-on-termination": attachmentField(func(_ *world, a *attachment) string {
		return strconv.FormatBool(a.deleteOnTermination)
	}),
}

func eniIPv6Addresses(_ *world, n *eni) []string {
	out := make([]string, len(n.ipv6))
	for i, a := range n.ipv6 {
		out[i] = a.String()
	}
	return out
}

// attachmentField is a filter on the ENI's attachment: an unattached ENI
// has no value for it.
func attachmentField(f func(w *world, a *attachment) string) eniField {
	return func(w *world, n *eni) []string {
		if n.attachment == nil {
			return nil
		}
		return []string{f(w, n.attachment)}
	}
}

// page applies MaxResults/NextToken to items in creation order. seqOf
// gives an item's creation sequence, which is what the token holds.
func page[T any](items []T, seqOf func(T) int64, p params) ([]T, string, *apiError) {
	max, hasMax, err := p.int("MaxResults")
	if err != nil {
		return nil, "", err
	}
	if hasMax && (max < 5 || max > 1000) {
		return nil, "", apiErr("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", max)
	}
	start := 0
	if tok := p.get("NextToken"); tok != "" {
		after, perr := strconv.ParseInt(strings.TrimPrefix(tok, "emu-"), 16, 64)
		if perr != nil || !strings.HasPrefix(tok, "emu-") {
			return nil, "", apiErr("InvalidParameterValue", "The pagination token '%s' is invalid.", tok)
		}
		// Sequences are unique and ascending: start after the token's.
		i, found := slices.BinarySearchFunc(items, after, func(item T, seq int64) int { return cmp.Compare(seqOf(item), seq) })
		if found {
			i++
		}
		start = i
	}
	items = items[start:]
	if !hasMax || len(items) <= max {
		return items, "", nil
	}
	items = items[:max]
	return items, "emu-" + strconv.FormatInt(seqOf(items[len(items)-1]), 16), nil
}

func describeNetworkInterfaces(w *world, p params, _ callEnv) (response, *apiError) {
	enis, next, err := describe(p, describer[*eni, xNetworkInterface]{idParam: "NetworkInterfaceId", all: w.describedENIs(),
		probe: &eni{}, fields: w.eniFields, lookup: w.describedENI, x: w.xENI})
	if err != nil {
		return nil, err
	}
	return &describeNetworkInterfacesResponse{NetworkInterfaces: enis, NextToken: next}, nil
}
