package nodeeni_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Subnets and security groups selected by tags, zone by zone: each node
// gets an ENI in the selected subnet of its zone, status names what was
// chosen, and a zone the selector no longer covers is said in Degraded
// while its node keeps its working ENI (a spec that gives a node no ENI
// is taken for a mistake, as with subnet names).
func TestSelectorsByTags(t *testing.T) {
	h := newHarness(t, emulator.World{})
	h.loaded = h.Load(t, emulator.World{
		Subnets: []emulator.SubnetSpec{
			{Name: "sel-a", VPC: h.VPC, CIDR: "10.0.96.0/20", AvailabilityZone: "us-east-1a", Tags: map[string]string{"net": "multus", "tier": "a"}},
			{Name: "sel-b", VPC: h.VPC, CIDR: "10.0.112.0/20", AvailabilityZone: "us-east-1b", Tags: map[string]string{"net": "multus", "tier": "b"}},
		},
		SecurityGroups: []emulator.SecurityGroupSpec{{Name: "sel", VPC: h.VPC, Tags: map[string]string{"net": "multus"}}},
		Instances:      []emulator.InstanceSpec{{Type: "m5.xlarge", Subnet: "nodes-a"}, {Type: "m5.xlarge", Subnet: "nodes-b"}},
	})
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	h.addNode("n1", h.instance(1), "us-east-1b", nil)
	h.start(h.options())

	spec := h.spec(nil)
	spec.SubnetSelector = []v1alpha1.SubnetSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "multus", "tier": "*"}}}
	spec.SecurityGroupSelector = []v1alpha1.SecurityGroupSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "multus"}}}
	h.createNodeENI("sel", spec)
	ne := h.ready("sel", 2)

	subnetA, subnetB := h.loaded.Subnets[0], h.loaded.Subnets[1]
	group := h.loaded.SecurityGroups[0]
	want := []v1alpha1.ResolvedSubnet{{ID: subnetA, Zone: "us-east-1a", CIDR: "10.0.96.0/20"}, {ID: subnetB, Zone: "us-east-1b", CIDR: "10.0.112.0/20"}}
	if !slices.Equal(ne.Status.Subnets, want) || !slices.Equal(ne.Status.SecurityGroups, []string{group}) {
		t.Fatalf("status subnets %+v groups %v; want %+v [%s]", ne.Status.Subnets, ne.Status.SecurityGroups, want, group)
	}
	for _, e := range h.enis() {
		wantSubnet := map[string]string{"n0": subnetA, "n1": subnetB}[e.Tags[eniplan.TagNode]]
		if e.SubnetID != wantSubnet || !slices.Equal(e.SecurityGroups, []string{group}) {
			t.Errorf("ENI %s of %s in %s with %v; want %s with [%s]", e.ID, e.Tags[eniplan.TagNode], e.SubnetID, e.SecurityGroups, wantSubnet, group)
		}
	}

	h.update("sel", func(s *v1alpha1.NodeENISpec) {
		s.SubnetSelector[0].Tags["tier"] = "a"
	})
	h.eventually("zone b said, its ENI kept", waitFor, func() (bool, string) {
		ne := h.get("sel")
		d := condition(ne, v1alpha1.ConditionDegraded)
		if d == nil || d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, eniplan.ReasonNoSubnetInZone) && !strings.Contains(d.Message, "us-east-1b") {
			return false, "degraded " + spew(d)
		}
		return len(h.enis()) == 2 && len(ne.Status.Subnets) == 1, fmt.Sprintf("%d ENIs, subnets %v: %s", len(h.enis()), ne.Status.Subnets, spew(d))
	})
}

func spew(c *metav1.Condition) string {
	if c == nil {
		return "<none>"
	}
	return c.Reason + ": " + c.Message
}
