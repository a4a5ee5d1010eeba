package emulator

import (
	"net/netip"
	"testing"
	"time"
)

// testWorld returns a world with one VPC and one subnet per CIDR given,
// each VPC with the subnet spanning all of it.
func testWorld(t *testing.T, cidrs ...string) (*world, []*subnet) {
	t.Helper()
	w := newWorld("us-east-1", "123456789012", 1)
	var subnets []*subnet
	for _, c := range cidrs {
		v, err := w.newVPC("", c, nil)
		if err != nil {
			t.Fatalf("newVPC %s: %v", c, err)
		}
		s, err := w.newSubnet("", v.id, c, "", "us-east-1a", nil)
		if err != nil {
			t.Fatalf("newSubnet %s: %v", c, err)
		}
		subnets = append(subnets, s)
	}
	return w, subnets
}

func testEnv() callEnv { return callEnv{now: time.Now(), detachDelay: time.Millisecond} }

// VPCs with the same CIDR have separate address spaces: automatic
// allocation in one ignores the other's addresses, and an explicit address
// can be held once in each.
func TestAddressesArePerVPC(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/24", "10.0.0.0/24")
	a, err := w.createENI(eniRequest{subnetID: s[0].id, secondaryCount: 2}, testEnv())
	if err != nil {
		t.Fatalf("createENI in VPC 1: %v", err)
	}
	b, err := w.createENI(eniRequest{subnetID: s[1].id, secondaryCount: 2}, testEnv())
	if err != nil {
		t.Fatalf("createENI in VPC 2: %v", err)
	}
	if a.primaryIP != b.primaryIP || a.primaryIP != netip.MustParseAddr("10.0.0.4") {
		t.Errorf("first automatic addresses %s and %s, want 10.0.0.4 in both VPCs", a.primaryIP, b.primaryIP)
	}
	if _, err := w.createENI(eniRequest{subnetID: s[1].id, primaryIP: "10.0.0.99"}, testEnv()); err != nil {
		t.Fatalf("10.0.0.99 in VPC 2: %v", err)
	}
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, primaryIP: "10.0.0.99"}, testEnv()); err != nil {
		t.Fatalf("10.0.0.99 in VPC 1 while VPC 2 holds it: %v", err)
	}
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, primaryIP: "10.0.0.99"}, testEnv()); err == nil || err.Code != "InvalidIPAddress.InUse" {
		t.Fatalf("10.0.0.99 twice in VPC 1: %v, want InvalidIPAddress.InUse", err)
	}
	// Freeing an address in one VPC leaves the other's alone.
	w.deleteENI(a)
	if n, ok := w.owner(b.vpcID, b.primaryIP); !ok || n != b {
		t.Errorf("after deleting VPC 1's ENI, VPC 2's %s is held by %v", b.primaryIP, n)
	}
	if s[0].used != 1 || s[1].used != 4 {
		t.Errorf("used addresses %d and %d, want 1 and 4", s[0].used, s[1].used)
	}
}
