package ec2_test

import (
	"net/netip"
	"testing"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

func TestReservedAddressIsTheFirstFourAndTheLastOfTheSubnet(t *testing.T) {
	for _, c := range []struct {
		subnet, addr string
		want         bool
	}{
		{"10.0.1.0/24", "10.0.1.0", true},
		{"10.0.1.0/24", "10.0.1.1", true},
		{"10.0.1.0/24", "10.0.1.2", true},
		{"10.0.1.0/24", "10.0.1.3", true},
		{"10.0.1.0/24", "10.0.1.4", false},
		{"10.0.1.0/24", "10.0.1.254", false},
		{"10.0.1.0/24", "10.0.1.255", true},
		{"10.0.1.32/27", "10.0.1.34", true},
		{"10.0.1.32/27", "10.0.1.63", true},
		{"10.0.1.32/27", "10.0.1.36", false},
		{"10.0.1.0/24", "10.0.2.1", false}, // another subnet's
		{"10.0.1.5/24", "10.0.1.0", true},  // a non-canonical CIDR is its masked form
		{"2600:1f14:abc:de00::/64", "2600:1f14:abc:de00::", true},
		{"2600:1f14:abc:de00::/64", "2600:1f14:abc:de00::3", true},
		{"2600:1f14:abc:de00::/64", "2600:1f14:abc:de00::4", false},
		{"2600:1f14:abc:de00::/64", "2600:1f14:abc:de00:ffff:ffff:ffff:ffff", true},
		{"2600:1f14:abc:de00::/64", "2600:1f14:abc:de00:ffff:ffff:ffff:fffe", false},
		{"2600:1f14:abc:de00::/64", "10.0.1.1", false}, // another family
		{"10.0.1.0/24", "", false},
	} {
		var a netip.Addr
		if c.addr != "" {
			a = netip.MustParseAddr(c.addr)
		}
		if got := ec2.ReservedAddress(netip.MustParsePrefix(c.subnet), a); got != c.want {
			t.Errorf("ReservedAddress(%s, %s) = %t, want %t", c.subnet, c.addr, got, c.want)
		}
	}
}
