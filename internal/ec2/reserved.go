package ec2

import "net/netip"

// ReservedAddress reports whether a is one of the addresses AWS reserves in
// the subnet CIDR subnet (IPv4 or IPv6): its first four (network, VPC
// router, DNS, future use) and its last. EC2 refuses to assign them
// (InvalidParameterValue), so callers can refuse one before any call.
func ReservedAddress(subnet netip.Prefix, a netip.Addr) bool {
	if !subnet.IsValid() || !a.IsValid() || !subnet.Contains(a) {
		return false
	}
	first := subnet.Masked().Addr()
	for range 4 {
		if a == first {
			return true
		}
		first = first.Next()
	}
	return a == lastAddress(subnet)
}

// lastAddress is the highest address of p: every host bit set.
func lastAddress(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
