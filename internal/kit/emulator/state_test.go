package emulator

import (
	"net/netip"
	"slices"
	"strconv"
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
		v, err := w.newVPC("", c, nil, false)
		if err != nil {
			t.Fatalf("newVPC %s: %v", c, err)
		}
		s, err := w.newSubnet(subnetRequest{vpcID: v.id, cidr: c, az: "us-east-1a"})
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

// Every prefix of a request is claimed before the next is allocated, in
// CreateNetworkInterface, AssignPrivateIpAddresses and a world load alike;
// explicit prefixes are claimed before anything is allocated automatically.
func TestPrefixesOfOneRequestAreDistinct(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/24")
	distinct := func(what string, n *eni, want int) {
		t.Helper()
		if len(n.prefixes) != want {
			t.Fatalf("%s: prefixes %v, want %d", what, n.prefixes, want)
		}
		for i, p := range n.prefixes {
			for _, q := range n.prefixes[i+1:] {
				if p.Overlaps(q) {
					t.Errorf("%s: prefixes %v overlap", what, n.prefixes)
				}
			}
			for _, a := range append([]netip.Addr{n.primaryIP}, n.secondaryIPs...) {
				if p.Contains(a) {
					t.Errorf("%s: prefix %s contains the ENI's address %s", what, p, a)
				}
			}
			for _, a := range prefixAddrs(p) {
				if o, _ := w.owner(n.vpcID, a); o != n {
					t.Errorf("%s: %s of prefix %s is held by %v", what, a, p, o)
				}
			}
		}
	}

	n, err := w.createENI(eniRequest{subnetID: s[0].id, prefixCount: 3}, testEnv())
	if err != nil {
		t.Fatalf("createENI with 3 prefixes: %v", err)
	}
	distinct("create", n, 3)

	p := params{"NetworkInterfaceId": {n.id}, "Ipv4PrefixCount": {"2"}}
	resp, aerr := assignPrivateIPAddresses(w, p, testEnv())
	if aerr != nil {
		t.Fatalf("assign 2 prefixes: %v", aerr)
	}
	if got := resp.(*assignPrivateIPAddressesResponse).AssignedPrefixes; len(got) != 2 || got[0] == got[1] {
		t.Errorf("assigned prefixes %v, want 2 distinct", got)
	}
	distinct("assign", n, 5)

	// In a fresh subnet, take .4 to .15: the next automatic address is
	// .16. Asking for 10.2.0.16/28 explicitly with an automatic primary
	// address must not put the primary inside the prefix.
	w, s = testWorld(t, "10.2.0.0/24")
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, secondaryCount: 11}, testEnv()); err != nil {
		t.Fatal(err)
	}
	m, err := w.createENI(eniRequest{subnetID: s[0].id, prefixes: []string{"10.2.0.16/28"}, prefixCount: 1}, testEnv())
	if err != nil {
		t.Fatalf("createENI with 10.2.0.16/28 and 1 more prefix: %v", err)
	}
	distinct("explicit and automatic", m, 2)
	if m.prefixes[0] != netip.MustParsePrefix("10.2.0.16/28") {
		t.Errorf("prefixes %v, want 10.2.0.16/28 first", m.prefixes)
	}
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, prefixes: []string{"10.2.0.16/28"}}, testEnv()); err == nil {
		t.Errorf("a prefix already delegated was delegated again")
	}
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, prefixes: []string{"10.2.0.96/28", "10.2.0.96/28"}}, testEnv()); err == nil {
		t.Errorf("one prefix given twice in a request was accepted")
	}
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, primaryIP: "10.2.0.100", prefixes: []string{"10.2.0.96/28"}}, testEnv()); err == nil {
		t.Errorf("a prefix containing the request's own primary address was accepted")
	}
	if want := 256 - 5 - 12 - 1 - 32; w.freeAddresses(s[0]) != want {
		t.Errorf("free addresses %d, want %d (refused requests must leave nothing behind)", w.freeAddresses(s[0]), want)
	}
}

func TestLoadPrefixesAreDistinct(t *testing.T) {
	e := New(Options{})
	res, err := e.Load(World{
		VPCs:              []VPCSpec{{Name: "v", CIDR: "10.1.0.0/24"}},
		Subnets:           []SubnetSpec{{Name: "s", VPC: "v", CIDR: "10.1.0.0/24", AvailabilityZone: "us-east-1a"}},
		NetworkInterfaces: []NetworkInterfaceSpec{{Subnet: "s", IPv4PrefixCount: 2, Count: 2}},
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	seen := map[netip.Prefix]string{}
	for _, l := range res.NetworkInterfaces {
		n := e.world.enis[l.ID]
		if len(n.prefixes) != 2 {
			t.Fatalf("%s has prefixes %v, want 2", n.id, n.prefixes)
		}
		for _, p := range n.prefixes {
			if other, dup := seen[p]; dup {
				t.Errorf("prefix %s is on %s and %s", p, other, n.id)
			}
			seen[p] = n.id
		}
	}
}

// AllowReassignment moves another ENI's secondary address; without it the
// address is in use. Primary addresses and delegated prefixes never move,
// and an address the ENI holds already is not added twice.
func TestAssignPrivateIPAddressesReassignment(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/24")
	from, err := w.createENI(eniRequest{subnetID: s[0].id, secondaryIPs: []string{"10.0.0.50"}, prefixes: []string{"10.0.0.64/28"}}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	to, err := w.createENI(eniRequest{subnetID: s[0].id, secondaryIPs: []string{"10.0.0.60"}}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	used := s[0].used
	assign := func(allow bool, ips ...string) ([]xPrivateIP, *apiError) {
		p := params{"NetworkInterfaceId": {to.id}, "AllowReassignment": {strconv.FormatBool(allow)}}
		for i, ip := range ips {
			p["PrivateIpAddress."+strconv.Itoa(i+1)] = []string{ip}
		}
		resp, err := assignPrivateIPAddresses(w, p, testEnv())
		if err != nil {
			return nil, err
		}
		return resp.(*assignPrivateIPAddressesResponse).Assigned, nil
	}
	wantCode := func(what, code string, err *apiError) {
		t.Helper()
		if err == nil || err.Code != code {
			t.Errorf("%s: %v, want %s", what, err, code)
		}
	}

	_, err = assign(false, "10.0.0.50")
	wantCode("another ENI's secondary without AllowReassignment", "InvalidIPAddress.InUse", err)
	_, err = assign(true, from.primaryIP.String())
	wantCode("another ENI's primary", "InvalidIPAddress.InUse", err)
	_, err = assign(true, "10.0.0.70")
	wantCode("inside another ENI's prefix", "InvalidIPAddress.InUse", err)
	_, err = assign(true, to.primaryIP.String())
	wantCode("its own primary", "InvalidParameterValue", err)
	// A refused call changes nothing, even when part of it was fine.
	_, err = assign(true, "10.0.0.50", from.primaryIP.String())
	wantCode("a movable and an unmovable address", "InvalidIPAddress.InUse", err)
	if !slices.Contains(from.secondaryIPs, netip.MustParseAddr("10.0.0.50")) || len(to.secondaryIPs) != 1 {
		t.Fatalf("after refused calls: from holds %v, to holds %v", from.secondaryIPs, to.secondaryIPs)
	}

	got, err := assign(true, "10.0.0.50", "10.0.0.60", "10.0.0.50")
	if err != nil {
		t.Fatalf("moving 10.0.0.50 with AllowReassignment: %v", err)
	}
	if len(got) != 2 {
		t.Errorf("assigned %v, want 10.0.0.60 (held already) and 10.0.0.50", got)
	}
	if len(from.secondaryIPs) != 0 {
		t.Errorf("the source still holds %v", from.secondaryIPs)
	}
	want := []netip.Addr{netip.MustParseAddr("10.0.0.60"), netip.MustParseAddr("10.0.0.50")}
	if len(to.secondaryIPs) != 2 || to.secondaryIPs[0] != want[0] || to.secondaryIPs[1] != want[1] {
		t.Errorf("the target holds %v, want %v", to.secondaryIPs, want)
	}
	if o, _ := w.owner(to.vpcID, want[1]); o != to {
		t.Errorf("10.0.0.50 is owned by %v, want %s", o, to.id)
	}
	if s[0].used != used {
		t.Errorf("moving an address changed the subnet's used count from %d to %d", used, s[0].used)
	}
	if _, err := assign(false, "10.0.0.50"); err != nil {
		t.Errorf("assigning an address the ENI holds already: %v", err)
	}
	if len(to.secondaryIPs) != 2 {
		t.Errorf("assigning a held address again gave %v", to.secondaryIPs)
	}
}

// An assignment that fails part-way (no /28 left although single
// addresses are) leaves the ENIs as they were.
func TestAssignPrivateIPAddressesRollsBack(t *testing.T) {
	// A /27 has 27 usable addresses, but neither of its /28s fits between
	// the reserved ones.
	w, s := testWorld(t, "10.0.0.0/27")
	from, err := w.createENI(eniRequest{subnetID: s[0].id, secondaryIPs: []string{"10.0.0.20"}}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	to, err := w.createENI(eniRequest{subnetID: s[0].id}, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	used := s[0].used
	p := params{"NetworkInterfaceId": {to.id}, "AllowReassignment": {"true"}, "PrivateIpAddress.1": {"10.0.0.20"},
		"SecondaryPrivateIpAddressCount": {"2"}, "Ipv4PrefixCount": {"1"}}
	if _, err := assignPrivateIPAddresses(w, p, testEnv()); err == nil || err.Code != "InsufficientCidrBlocks" {
		t.Fatalf("assign with no /28 free: %v, want InsufficientCidrBlocks", err)
	}
	if len(from.secondaryIPs) != 1 || len(to.secondaryIPs) != 0 || len(to.prefixes) != 0 || s[0].used != used {
		t.Errorf("after the failed call: from %v, to %v %v, used %d (was %d)", from.secondaryIPs, to.secondaryIPs, to.prefixes, s[0].used, used)
	}
	if o, _ := w.owner(from.vpcID, netip.MustParseAddr("10.0.0.20")); o != from {
		t.Errorf("10.0.0.20 is owned by %v after the failed call, want %s", o, from.id)
	}
}

// An explicit primary address is counted once against the free addresses.
func TestCreateENIFillsSubnetWithExplicitPrimary(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/28") // 11 usable addresses
	if _, err := w.createENI(eniRequest{subnetID: s[0].id, primaryIP: "10.0.0.14", secondaryCount: 10}, testEnv()); err != nil {
		t.Fatalf("an explicit primary and 10 secondary addresses in a /28: %v", err)
	}
	if free := w.freeAddresses(s[0]); free != 0 {
		t.Errorf("%d addresses left, want 0", free)
	}
}

// With a visibility delay, a created ENI is unknown to every other call
// until the delay is over (EC2's eventual consistency); a create repeated
// with the same ClientToken answers it all the same.
func TestCreatedENIIsInvisibleForTheVisibilityDelay(t *testing.T) {
	w, s := testWorld(t, "10.0.0.0/24")
	env := testEnv()
	env.visibility = 10 * time.Second
	create := params{"SubnetId": {s[0].id}, "ClientToken": {"token-1"}}
	resp, err := createNetworkInterface(w, create, env)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := resp.(*createNetworkInterfaceResponse).NetworkInterface.NetworkInterfaceID

	hidden := map[string]func() *apiError{
		"DescribeNetworkInterfaces by ID": func() *apiError {
			_, err := describeNetworkInterfaces(w, params{"NetworkInterfaceId.1": {id}}, env)
			return err
		},
		"AttachNetworkInterface": func() *apiError {
			_, err := attachNetworkInterface(w, params{"NetworkInterfaceId": {id}, "InstanceId": {"i-00000000000000001"}, "DeviceIndex": {"1"}}, env)
			return err
		},
		"CreateTags": func() *apiError {
			_, err := createTags(w, params{"ResourceId.1": {id}, "Tag.1.Key": {"k"}, "Tag.1.Value": {"v"}}, env)
			return err
		},
		"DeleteNetworkInterface": func() *apiError {
			_, err := deleteNetworkInterface(w, params{"NetworkInterfaceId": {id}}, env)
			return err
		},
	}
	for name, call := range hidden {
		if err := call(); err == nil || err.Code != "InvalidNetworkInterfaceID.NotFound" {
			t.Errorf("%s during the delay: %v, want InvalidNetworkInterfaceID.NotFound", name, err)
		}
	}
	list, err := describeNetworkInterfaces(w, params{"Filter.1.Name": {"subnet-id"}, "Filter.1.Value.1": {s[0].id}}, env)
	if err != nil {
		t.Fatalf("describe by subnet: %v", err)
	}
	if got := list.(*describeNetworkInterfacesResponse).NetworkInterfaces; len(got) != 0 {
		t.Errorf("describe by subnet during the delay lists %d ENIs, want 0", len(got))
	}
	again, err := createNetworkInterface(w, create, env)
	if err != nil {
		t.Fatalf("create with the same token during the delay: %v", err)
	}
	if got := again.(*createNetworkInterfaceResponse).NetworkInterface.NetworkInterfaceID; got != id {
		t.Errorf("create with the same token answered %s, want %s", got, id)
	}

	w.advance(env.now.Add(env.visibility))
	if _, err := describeNetworkInterfaces(w, params{"NetworkInterfaceId.1": {id}}, env); err != nil {
		t.Errorf("describe by ID after the delay: %v", err)
	}
	if _, err := deleteNetworkInterface(w, params{"NetworkInterfaceId": {id}}, env); err != nil {
		t.Errorf("delete after the delay: %v", err)
	}
}
