package emulator

import (
	"strings"
	"testing"
)

// A VPC's secondary CIDR blocks hold subnets as its primary block does;
// a subnet outside every block, a block overlapping another and a sixth
// block are refused.
func TestSecondaryVPCCIDRs(t *testing.T) {
	vpc := func(secondary ...string) VPCSpec {
		return VPCSpec{Name: "v", CIDR: "10.0.0.0/16", SecondaryCIDRs: secondary}
	}
	subnet := func(cidr string) []SubnetSpec {
		return []SubnetSpec{{Name: "s", VPC: "v", CIDR: cidr, AvailabilityZone: "us-east-1a"}}
	}
	cases := []struct {
		name    string
		world   World
		wantErr string
	}{
		{"subnet in the secondary block", World{VPCs: []VPCSpec{vpc("100.64.0.0/16")}, Subnets: subnet("100.64.0.0/16"),
			NetworkInterfaces: []NetworkInterfaceSpec{{Subnet: "s", Count: 3}}}, ""},
		{"subnet in the primary block", World{VPCs: []VPCSpec{vpc("100.64.0.0/16")}, Subnets: subnet("10.0.1.0/24")}, ""},
		{"subnet outside every block", World{VPCs: []VPCSpec{vpc("100.64.0.0/16")}, Subnets: subnet("100.65.0.0/24")}, "InvalidSubnet.Range"},
		{"subnet larger than its block", World{VPCs: []VPCSpec{vpc("100.64.0.0/17")}, Subnets: subnet("100.64.0.0/16")}, "InvalidSubnet.Range"},
		{"overlapping blocks", World{VPCs: []VPCSpec{vpc("10.0.128.0/17")}}, "InvalidVpc.Range"},
		{"four secondary blocks", World{VPCs: []VPCSpec{vpc("100.64.0.0/16", "100.65.0.0/16", "100.66.0.0/16", "100.67.0.0/16")}}, ""},
		{"a fifth", World{VPCs: []VPCSpec{vpc("100.64.0.0/16", "100.65.0.0/16", "100.66.0.0/16", "100.67.0.0/16", "100.68.0.0/16")}}, "CidrLimitExceeded"},
		{"too large a block", World{VPCs: []VPCSpec{vpc("100.64.0.0/15")}}, "InvalidParameterValue"},
	}
	for _, c := range cases {
		res, err := New(Options{}).Load(c.world)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want %s", c.name, err, c.wantErr)
		case c.wantErr == "":
			for _, e := range res.NetworkInterfaces {
				if !strings.HasPrefix(e.PrivateIP, "100.64.0.") {
					t.Errorf("%s: ENI address %s, want one in 100.64.0.0/16", c.name, e.PrivateIP)
				}
			}
		}
	}
}
