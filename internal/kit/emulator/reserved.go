package emulator

import "net/netip"

// AWS reserves the first four addresses and the last one of every subnet
// CIDR, IPv4 and IPv6 alike ("Subnet CIDR blocks", Amazon VPC User Guide):
// network, VPC router, DNS, future use, broadcast. EC2 refuses to assign
// them and never picks them.

// reservedIn reports whether a is one of the reserved addresses of the
// subnet CIDR p.
func reservedIn(p netip.Prefix, a netip.Addr) bool {
	if !p.IsValid() || !p.Contains(a) {
		return false
	}
	base := p.Masked().Addr()
	first := base
	for range 4 {
		if a == first {
			return true
		}
		first = first.Next()
	}
	return a == lastAddr(p)
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// reservedOverlap reports whether the prefix pf holds a reserved address
// of the subnet CIDR p: its first four or its last.
func reservedOverlap(p, pf netip.Prefix) bool {
	if !p.IsValid() || !p.Overlaps(pf) {
		return false
	}
	a := p.Masked().Addr()
	for range 4 {
		if pf.Contains(a) {
			return true
		}
		a = a.Next()
	}
	return pf.Contains(lastAddr(p))
}

// errReserved is EC2's answer to an explicit reserved address.
func errReserved(a netip.Addr) *apiError {
	return apiErr("InvalidParameterValue", "Address %s is in subnet's reserved address range", a)
}

// reservedAddr reports whether a is reserved in the subnet's CIDR of
// its family.
func (s *subnet) reservedAddr(a netip.Addr) bool {
	if a.Is4() {
		return reservedIn(s.cidr, a)
	}
	return reservedIn(s.ipv6, a)
}
