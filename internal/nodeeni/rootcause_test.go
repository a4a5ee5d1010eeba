package nodeeni_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// degradedWith waits until a NodeENI is Degraded with reason and a
// message containing every want.
func (h *harness) degradedWith(name, reason string, wants ...string) *metav1.Condition {
	h.t.Helper()
	var c *metav1.Condition
	h.eventually(name+" Degraded "+reason, waitFor, func() (bool, string) {
		ne := h.get(name)
		c = condition(ne, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
			return false, fmt.Sprintf("%+v", ne.Status.Conditions)
		}
		for _, w := range wants {
			if !strings.Contains(c.Message, w) {
				return false, fmt.Sprintf("%q lacks %q", c.Message, w)
			}
		}
		return true, ""
	})
	return c
}

// A subnet or security group that does not exist in the VPC is reported
// as such (naming it) on every node, not as NoSubnetInZone; a subnet that
// exists in another zone than the node's is NoSubnetInZone.
func TestNotFoundIsTheRootCauseOnEveryNode(t *testing.T) {
	h := newHarness(t, threeNodes())
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	h.addNode("n1", h.instance(1), "us-east-1a", nil)
	h.addNode("n2", h.instance(2), "us-east-1b", nil)
	h.start(h.options())

	byName := h.spec(nil)
	byName.SubnetNames = []string{"no-such-subnet"}
	byName.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("typo-name", byName)
	byID := h.spec(nil)
	byID.SubnetIDs = []string{"subnet-0123456789abcdef0"}
	byID.SecurityGroupNames = []string{"multus"}
	byID.DeviceIndex = 2
	h.createNodeENI("typo-id", byID)
	group := h.spec(nil)
	group.SubnetNames = []string{"multus-a", "multus-b"}
	group.SecurityGroupNames = []string{"no-such-group"}
	group.DeviceIndex = 3
	h.createNodeENI("typo-group", group)
	zone := h.spec(nil)
	zone.SubnetNames = []string{"storage-a"} // exists, in us-east-1a only
	zone.SecurityGroupNames = []string{"storage"}
	// Index 1, as typo-name: the typos create nothing.
	h.createNodeENI("zone", zone)

	for _, c := range []struct{ name, reason, what string }{
		{"typo-name", eniplan.ReasonSubnetNotFound, `"no-such-subnet"`},
		{"typo-id", eniplan.ReasonSubnetNotFound, "subnet-0123456789abcdef0"},
		{"typo-group", eniplan.ReasonSecurityGroupNotFound, `"no-such-group"`},
	} {
		cond := h.degradedWith(c.name, c.reason, c.what, "n0", "n1", "n2")
		if strings.Contains(cond.Message, eniplan.ReasonNoSubnetInZone) {
			t.Errorf("%s: the message blames the zone: %s", c.name, cond.Message)
		}
		t.Logf("%s: Degraded %s: %s", c.name, cond.Reason, cond.Message)
	}
	// One subnet found, not in n2's zone, and one not found: the missing
	// one is named, and the zone said.
	mixed := h.spec(nil)
	mixed.SubnetNames = []string{"storage-a", "no-such-subnet-b"}
	mixed.SecurityGroupNames = []string{"storage"}
	mixed.DeviceIndex = 2
	h.createNodeENI("mixed", mixed)
	h.degradedWith("mixed", eniplan.ReasonSubnetNotFound, `nodes n0, n1: SubnetNotFound: no subnet of the cluster's VPC has the Name tag "no-such-subnet-b"`,
		`node n2: SubnetNotFound: no subnet of the cluster's VPC has the Name tag "no-such-subnet-b"; fix subnetName(s) or tag the subnet; none of the subnets found is in the node's zone`)

	cond := h.degradedWith("zone", eniplan.ReasonNoSubnetInZone, "node n2: NoSubnetInZone", "us-east-1b")
	if strings.Contains(cond.Message, "n0") || strings.Contains(cond.Message, "n1") {
		t.Errorf("zone: nodes of us-east-1a reported: %s", cond.Message)
	}
	// The zone NodeENI's ENIs for n0 and n1, and mixed's for them.
	h.eventually("the us-east-1a nodes' ENIs", waitFor, func() (bool, string) {
		n := len(h.enis())
		return n == 4, fmt.Sprintf("%d ENIs", n)
	})
}
