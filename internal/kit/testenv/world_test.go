package testenv

import (
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The default world loads as its documentation says: subnets by name in
// alternating zones, nodes alternating between nodes-a and nodes-b,
// security groups of VPC main only in Groups, and the client reads it.
func TestDefaultWorld(t *testing.T) {
	e := NewEC2(t, emulator.Options{}, DefaultWorld(OnlySubnets("nodes-a", "nodes-b", "pods"), WithNodes(3, "m5.xlarge"),
		WithSecurityGroups("storage"), WithOtherVPC(), WithENIs(BranchENIs(2, map[string]string{"Name": "branch"}))))
	if len(e.Subnets) != 4 || e.Subnets["nodes-b"] == "" || e.Subnets["elsewhere"] == "" {
		t.Fatalf("subnets %v", e.Subnets)
	}
	if len(e.Groups) != 2 || e.Groups["multus"] == "" || e.Groups["storage"] == "" {
		t.Fatalf("groups of VPC main %v", e.Groups)
	}
	if got := NodeName(2) + " " + Zone(2) + " " + Zone(3); got != "node-2 us-east-1a us-east-1b" {
		t.Fatalf("node 2 and zones: %s", got)
	}
	if n := e.TotalCalls(); n != 0 {
		t.Fatalf("%d calls counted after loading", n)
	}
	for i, inst := range e.World.Instances {
		if inst.ID == "" || len(e.World.NetworkInterfaces) != 2 {
			t.Fatalf("instance %d %+v, ENIs %+v", i, inst, e.World.NetworkInterfaces)
		}
	}
	eni := e.ENI(t, e.World.NetworkInterfaces[1].ID)
	if eni.Tags["Name"] != "branch" || eni.SubnetID != e.Subnets["pods"] {
		t.Fatalf("ENI %+v", eni)
	}
	if e.Calls()["DescribeNetworkInterfaces"] != 1 {
		t.Fatalf("calls %v", e.Calls())
	}
}
