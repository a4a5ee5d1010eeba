package awstypes

import (
	"net/netip"
)

// ENI is a network interface as the operator sees it.
type ENI struct {
	ID               string
	SubnetID         string
	VPCID            string
	AvailabilityZone string
	InterfaceType    string // interface, branch, trunk, ...
	Status           string // available, in-use, ...
	Description      string
	MAC              string
	PrimaryIP        string
	SecondaryIPs     []string
	IPv6Addresses    []string
	IPv4Prefixes     []netip.Prefix
	IPv6Prefixes     []netip.Prefix
	SecurityGroups   []string
	RequesterManaged bool
	// SourceDestCheck is EC2's source/destination check: true (EC2's
	// default, and what an answer without it means) drops traffic not
	// addressed to the ENI.
	SourceDestCheck bool
	Attachment      *Attachment
	Tags            map[string]string
}

// Attachment is an ENI's attachment to an instance.
type Attachment struct {
	ID                  string
	InstanceID          string
	DeviceIndex         int
	NetworkCardIndex    int
	Status              string // attaching, attached, detaching
	DeleteOnTermination bool
}

// CreateENIInput describes an ENI to create.
type CreateENIInput struct {
	SubnetID       string
	SecurityGroups []string
	Description    string
	// Tags are applied atomically with the creation (TagSpecifications),
	// so an ENI never exists without its ownership tags.
	Tags map[string]string
	// ClientToken makes the call idempotent: a retry after a lost response
	// returns the ENI the first call created instead of a second one.
	ClientToken string
	// Addresses and prefixes EC2 assigns at creation (0: none).
	SecondaryIPv4Count, IPv4PrefixCount, IPv6AddressCount, IPv6PrefixCount int
	// InterfaceType is efa or efa-only; "" or interface makes a plain ENI.
	InterfaceType string
}

// Holds reports whether the ENI has ip as an address or inside one of its
// delegated prefixes.
func (e ENI) Holds(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, b := range e.Addresses() {
		if b == a {
			return true
		}
	}
	for _, p := range e.Prefixes() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addresses are the ENI's own addresses: primary, secondary and IPv6.
func (e ENI) Addresses() []netip.Addr {
	out := make([]netip.Addr, 0, 1+len(e.SecondaryIPs)+len(e.IPv6Addresses))
	for _, group := range [][]string{{e.PrimaryIP}, e.SecondaryIPs, e.IPv6Addresses} {
		for _, ip := range group {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// Prefixes are the ENI's delegated prefixes, IPv4 and IPv6.
func (e ENI) Prefixes() []netip.Prefix {
	return append(append([]netip.Prefix{}, e.IPv4Prefixes...), e.IPv6Prefixes...)
}

// Clone copies the parts of an ENI a recorded write may change, so the
// snapshot's copy, shared with other readers, is never written.
func (e ENI) Clone() ENI {
	tags := make(map[string]string, len(e.Tags))
	for k, v := range e.Tags {
		tags[k] = v
	}
	e.Tags = tags
	e.SecurityGroups = append([]string(nil), e.SecurityGroups...)
	if e.Attachment != nil {
		a := *e.Attachment
		e.Attachment = &a
	}
	return e
}
