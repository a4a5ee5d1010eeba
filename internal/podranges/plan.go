// Package podranges reserves the pods' IPv4 range of a NodeENI with
// multus.podAddressReservation in each of its subnets, as a subnet CIDR
// reservation of type explicit: EC2 then places no ENI address in it, so
// the whereabouts range generated from it (internal/attachdefs) never
// hands out an ENI's own address. plan.go decides, as pure functions;
// controller.go reads, calls EC2 and writes the NodeENI's status.
package podranges

import (
	"net/netip"
	"slices"
)

// pick returns the highest block of prefix length bits within subnet
// that holds none of the addresses AWS reserves in it and overlaps no
// range taken (other reservations, addresses and prefixes in use).
func pick(subnet netip.Prefix, bits int, taken []netip.Prefix) (netip.Prefix, bool) {
	subnet = subnet.Masked()
	if !subnet.Addr().Is4() || bits < subnet.Bits() || bits > 32 {
		return netip.Prefix{}, false
	}
	base := u32(subnet.Addr())
	size := uint32(1) << (32 - bits)
	blocks := uint32(1) << (bits - subnet.Bits())
	first, last := base+3, base+uint32((uint64(1)<<(32-subnet.Bits()))-1) // reserved: .0-.3 and the last
	for i := blocks; i > 0; i-- {
		start := base + (i-1)*size
		end := start + size - 1
		if start <= first || end >= last {
			continue
		}
		block := netip.PrefixFrom(addr(start), bits)
		if !slices.ContainsFunc(taken, block.Overlaps) {
			return block, true
		}
	}
	return netip.Prefix{}, false
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// reservation is a proven reservation of the NodeENI.
type reservation struct {
	ID, Subnet string
	CIDR       netip.Prefix
}

// plan is what one pass does for a NodeENI.
type plan struct {
	// Keep are the reservations that serve the spec, one per subnet.
	Keep []reservation
	// Create are the subnets without one.
	Create []string
	// Delete are the proven reservations the spec no longer asks for
	// (another size, a subnet it left, the NodeENI going).
	Delete []reservation
}

// decide keeps one reservation of the wanted size (0: none) in each of
// the NodeENI's subnets, creates the missing ones and deletes every
// other proven one of the NodeENI.
func decide(bits int, subnets []string, mine []reservation) plan {
	var p plan
	kept := map[string]bool{}
	for _, r := range mine {
		if bits > 0 && r.CIDR.Bits() == bits && slices.Contains(subnets, r.Subnet) && !kept[r.Subnet] {
			kept[r.Subnet] = true
			p.Keep = append(p.Keep, r)
			continue
		}
		p.Delete = append(p.Delete, r)
	}
	if bits > 0 {
		for _, s := range subnets {
			if !kept[s] {
				p.Create = append(p.Create, s)
			}
		}
	}
	return p
}
