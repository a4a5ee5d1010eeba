package emulator

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// The sandbox's world (hack/demo/world.json) is a World: it decodes with no
// unknown field and loads.
func TestDemoWorldLoads(t *testing.T) {
	b, err := os.ReadFile("../../../hack/demo/world.json")
	if err != nil {
		t.Fatal(err)
	}
	var w World
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("decoding hack/demo/world.json: %v", err)
	}
	res, err := New(Options{}).Load(w)
	if err != nil {
		t.Fatalf("loading hack/demo/world.json: %v", err)
	}
	if len(res.VPCs) != len(w.VPCs) || len(res.Subnets) != len(w.Subnets) || len(res.Instances) != len(w.Instances) {
		t.Errorf("loaded %+v from %+v", res, w)
	}
}

// A VPC's Amazon-provided IPv6 block is a /56 of its own; subnets take
// its /64s by index, and a subnet block outside it is refused.
func TestAmazonProvidedIPv6(t *testing.T) {
	index := func(n int) *int { return &n }
	vpcs := []VPCSpec{{Name: "v", CIDR: "10.0.0.0/16", AmazonProvidedIPv6: true}, {Name: "w", CIDR: "10.0.0.0/16", AmazonProvidedIPv6: true},
		{Name: "plain", CIDR: "10.0.0.0/16"}}
	e := New(Options{})
	res, err := e.Load(World{VPCs: vpcs, Subnets: []SubnetSpec{{Name: "s", VPC: "v", CIDR: "10.0.0.0/24", IPv6CIDRIndex: index(3)}}})
	if err != nil {
		t.Fatal(err)
	}
	v, w, s := e.world.vpcs[res.VPCs[0]], e.world.vpcs[res.VPCs[1]], e.world.subnets[res.Subnets[0]]
	if v.ipv6.Bits() != 56 || v.ipv6.Overlaps(w.ipv6) || e.world.vpcs[res.VPCs[2]].ipv6.IsValid() {
		t.Errorf("VPC blocks %s and %s, want distinct /56s; the plain VPC has %s", v.ipv6, w.ipv6, e.world.vpcs[res.VPCs[2]].ipv6)
	}
	a := v.ipv6.Addr().As16()
	a[7] = 3
	if want := netip.PrefixFrom(netip.AddrFrom16(a), 64); s.ipv6 != want {
		t.Errorf("subnet with ipv6CidrIndex 3 has %s, want %s", s.ipv6, want)
	}

	for _, c := range []struct {
		name, want string
		subnet     SubnetSpec
	}{
		{"block outside the VPC's", "InvalidSubnet.Range", SubnetSpec{IPv6CIDR: "2600:1f18::/64"}},
		{"index without a block", "needs a VPC with an IPv6 block", SubnetSpec{IPv6CIDRIndex: index(0), VPC: "plain"}},
		{"index out of range", "outside the 256 /64s", SubnetSpec{IPv6CIDRIndex: index(256)}},
		{"both", "exclude each other", SubnetSpec{IPv6CIDRIndex: index(0), IPv6CIDR: "2600:1f18::/64"}},
	} {
		sn := c.subnet
		sn.CIDR, sn.AvailabilityZone = "10.0.1.0/24", "us-east-1a"
		if sn.VPC == "" {
			sn.VPC = res.VPCs[0]
		} else {
			sn.VPC = res.VPCs[2]
		}
		if _, err := e.Load(World{Subnets: []SubnetSpec{sn}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
