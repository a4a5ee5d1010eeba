package emulator

import (
	"net/netip"
	"testing"
)

// Delegated prefixes never hold a reserved address: an automatic /80 is
// not the top one of the /64 (it holds the last address), an automatic
// /28 is neither the first nor the last of the subnet, and explicit
// prefixes holding one are refused.
func TestDelegatedPrefixesHoldNoReservedAddress(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/24")
	s[0].ipv6 = netip.MustParsePrefix("2600:1f18::/64")
	n, err := w.createENI(eniRequest{subnetID: s[0].id, prefixCount: 1, ipv6PrefixCnt: 1}, testEnv())
	if err != nil {
		t.Fatalf("createENI with prefixes: %v", err)
	}
	for _, pf := range append(n.prefixes, n.ipv6Prefixes...) {
		p := s[0].cidr
		if pf.Addr().Is6() {
			p = s[0].ipv6
		}
		if reservedOverlap(p, pf) {
			t.Errorf("delegated %s holds a reserved address of %s", pf, p)
		}
	}
	for _, pf := range []string{"10.0.0.0/28", "10.0.0.240/28"} {
		if _, err := w.createENI(eniRequest{subnetID: s[0].id, prefixes: []string{pf}}, testEnv()); err == nil ||
			err.Code != "InvalidParameterValue" {
			t.Errorf("explicit prefix %s: %v, want InvalidParameterValue", pf, err)
		}
	}
}

func TestLastAddrSetsEveryHostBit(t *testing.T) {
	for p, want := range map[string]string{
		"10.0.0.0/24": "10.0.0.255", "10.0.0.32/27": "10.0.0.63", "10.0.0.7/32": "10.0.0.7",
		"2600:1f18::/64": "2600:1f18::ffff:ffff:ffff:ffff", "2600:1f18::/80": "2600:1f18::ffff:ffff:ffff",
	} {
		if got := lastAddr(netip.MustParsePrefix(p)); got != netip.MustParseAddr(want) {
			t.Errorf("lastAddr(%s) = %s, want %s", p, got, want)
		}
	}
}
