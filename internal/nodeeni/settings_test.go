package nodeeni_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// ec2Writes are the EC2 actions that change something.
func ec2Writes() []string {
	return []string{"CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute", "AssignPrivateIpAddresses",
		"UnassignPrivateIpAddresses", "CreateTags", "DeleteTags", "DetachNetworkInterface", "DeleteNetworkInterface"}
}

// writesOf returns the write calls among an emulator's call counts.
func writesOf(by map[string]int) map[string]int {
	out := map[string]int{}
	for _, a := range ec2Writes() {
		if by[a] > 0 {
			out[a] = by[a]
		}
	}
	return out
}

// settingsHarness is a harness with a p4d.24xlarge (four network cards)
// as node n0 in us-east-1a and subnet v6-a there with an IPv6 CIDR; it
// returns that subnet's ID.
func settingsHarness(t *testing.T) (*harness, string) {
	h := newHarness(t, emulator.World{
		Subnets: []emulator.SubnetSpec{{Name: "v6-a", VPC: "main", CIDR: "10.0.96.0/20", IPv6CIDR: "2600:1f18:aa:100::/64",
			AvailabilityZone: "us-east-1a"}},
		Instances: []emulator.InstanceSpec{{Type: "p4d.24xlarge", Subnet: "nodes-a"}},
	})
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	return h, h.loaded.Subnets[0]
}

// A NodeENI with address counts, the source/destination check off and
// network card 1 gets an ENI with exactly those, read back from EC2;
// a pass in sync writes nothing; someone turning the check back on is
// undone with one call; raising the address count assigns the
// difference with one call.
func TestENISettings(t *testing.T) {
	h, v6 := settingsHarness(t)
	h.startStepped(h.options())
	spec := h.spec(nil)
	spec.SubnetID, spec.SecurityGroupNames = v6, []string{"multus"}
	spec.SecondaryPrivateIPv4Count, spec.IPv6AddressCount = 3, 1
	spec.SourceDestCheck, spec.NetworkCardIndex = ptr.To(false), 1
	h.createNodeENI("settings", spec)
	h.ready("settings", 1)

	enis := h.enis()
	if len(enis) != 1 {
		t.Fatalf("%d ENIs, want 1", len(enis))
	}
	e := enis[0]
	if len(e.SecondaryIPs) != 3 || len(e.IPv6Addresses) != 1 || e.SourceDestCheck {
		t.Errorf("ENI %s: %d secondary IPv4, %d IPv6, source/destination check %t; want 3, 1, false", e.ID, len(e.SecondaryIPs),
			len(e.IPv6Addresses), e.SourceDestCheck)
	}
	if a := e.Attachment; a == nil || a.NetworkCardIndex != 1 || a.DeviceIndex != 1 || a.InstanceID != h.instance(0) {
		t.Errorf("ENI %s attachment %+v, want card 1, device index 1 on %s", e.ID, a, h.instance(0))
	}
	by := writesOf(h.Calls())
	if by["CreateNetworkInterface"] != 1 || by["AttachNetworkInterface"] != 1 || by["ModifyNetworkInterfaceAttribute"] != 2 ||
		by["AssignPrivateIpAddresses"] != 0 {
		t.Errorf("writes %v, want 1 create, 1 attach, 2 modifies (DeleteOnTermination, source/destination check), no assign", by)
	}

	// In sync: several resyncs later, not one write.
	h.Emulator.ResetCounts()
	h.steps(5)
	if w := writesOf(h.Calls()); len(w) > 0 {
		t.Errorf("a NodeENI in sync made EC2 writes: %v", w)
	}

	// Someone turns the check back on: one Modify turns it off again.
	if err := h.ec2Client().SetSourceDestCheck(context.Background(), e.ID, true); err != nil {
		t.Fatal(err)
	}
	h.Emulator.ResetCounts()
	h.eventuallySteps("source/destination check repaired", 10, func() (bool, string) {
		got := h.ENI(t, e.ID)
		return !got.SourceDestCheck, fmt.Sprintf("check %t", got.SourceDestCheck)
	})
	h.steps(3)
	if w := writesOf(h.Calls()); len(w) != 1 || w["ModifyNetworkInterfaceAttribute"] != 1 {
		t.Errorf("repairing the check took writes %v, want one ModifyNetworkInterfaceAttribute", w)
	}

	// Raising the count assigns the difference with one call; the ENI
	// stays.
	h.Emulator.ResetCounts()
	h.update("settings", func(s *v1alpha1.NodeENISpec) { s.SecondaryPrivateIPv4Count = 5 })
	h.eventually("5 secondary addresses", waitFor, func() (bool, string) {
		got := h.ENI(t, e.ID)
		return len(got.SecondaryIPs) == 5, fmt.Sprintf("%d secondary addresses", len(got.SecondaryIPs))
	})
	h.ready("settings", 1)
	h.steps(3)
	if w := writesOf(h.Calls()); len(w) != 1 || w["AssignPrivateIpAddresses"] != 1 {
		t.Errorf("raising the count took writes %v, want one AssignPrivateIpAddresses", w)
	}
}

// A network card the node's type lacks is Degraded with
// NetworkCardBeyondLimit, and nothing is created or attached.
func TestENISettingsCardBeyondType(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.xlarge", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	h.startStepped(h.options())
	spec := h.multusSpec(nil)
	spec.NetworkCardIndex = 1
	h.createNodeENI("card", spec)
	var c *metav1.Condition
	h.eventually("Degraded NetworkCardBeyondLimit", waitFor, func() (bool, string) {
		ne := h.get("card")
		if ne == nil {
			return false, "missing"
		}
		c = condition(ne, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == eniplan.ReasonNetworkCardBeyondLimit, fmt.Sprintf("%+v", c)
	})
	t.Logf("Degraded: %s: %s", c.Reason, c.Message)
	h.steps(3)
	by := h.Calls()
	if w := writesOf(by); len(w) > 0 {
		t.Errorf("a node whose type lacks the card got EC2 writes: %v", w)
	}
	if by["DescribeInstanceTypes"] != 1 {
		t.Errorf("DescribeInstanceTypes called %d times, want once for the type", by["DescribeInstanceTypes"])
	}
}
