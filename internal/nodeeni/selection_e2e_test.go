package nodeeni_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// passes waits until the operator has re-read the catalog a few times
// since the counts were reset: what a tag changed has been seen.
func (h *harness) passes() {
	h.t.Helper()
	h.eventually("a few catalog reads", waitFor, func() (bool, string) { return h.calls("DescribeSecurityGroups") >= 3, fmt.Sprint(h.Calls()) })
}

// selectionSaid waits until SelectionChanged is True with reason,
// naming every one of ids.
func (h *harness) selectionSaid(name, reason string, ids ...string) {
	h.t.Helper()
	h.eventually("SelectionChanged "+reason, waitFor, func() (bool, string) {
		c := condition(h.get(name), v1alpha1.ConditionSelectionChanged)
		ok := c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && strings.Contains(c.Message, "until a subnet or security-group field of the spec changes")
		for _, id := range ids {
			ok = ok && strings.Contains(c.Message, id)
		}
		return ok, spew(c)
	})
}

// A wide-open group tagged to match the securityGroupSelector is not put
// on the running ENIs: they keep the groups they were created with, the
// change is said in SelectionChanged, and only a change of the spec's
// group sources applies the new resolution to them.
func TestTaggedGroupIsNotAddedToRunningENIs(t *testing.T) {
	h, _ := nodesHarness(t, 2, "sg")
	multus, open := h.Groups["multus"], h.Groups["storage"]
	h.tagResource(multus, map[string]string{"net": "data"})
	h.start(h.selectionOptions())
	spec := h.spec(map[string]string{"ng": "sg"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupSelector = []v1alpha1.SecurityGroupSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "data"}}}
	h.createNodeENI("sg", spec)
	h.ready("sg", 2)

	h.tagResource(open, map[string]string{"net": "data"})
	h.passes()
	for _, e := range h.enis() {
		if !slices.Equal(e.SecurityGroups, []string{multus}) {
			t.Fatalf("running ENI %s now has groups %v; want [%s]", e.ID, e.SecurityGroups, multus)
		}
	}
	if n := h.calls("ModifyNetworkInterfaceAttribute"); n != 0 {
		t.Fatalf("%d ModifyNetworkInterfaceAttribute calls", n)
	}
	h.selectionSaid("sg", eniplan.ReasonSecurityGroupsChanged, open)
	if ne := h.get("sg"); !slices.Contains(ne.Status.SecurityGroups, open) {
		t.Fatalf("status.securityGroups %v: the resolution is said as it is", ne.Status.SecurityGroups)
	}

	h.update("sg", func(s *v1alpha1.NodeENISpec) {
		s.SecurityGroupSelector = append(s.SecurityGroupSelector, v1alpha1.SecurityGroupSelectorTerm{ID: multus})
	})
	h.eventually("the spec change applies the new groups", waitFor, func() (bool, string) {
		for _, e := range h.enis() {
			got := slices.Sorted(slices.Values(e.SecurityGroups))
			if !slices.Equal(got, slices.Sorted(slices.Values([]string{multus, open}))) {
				return false, fmt.Sprintf("%s: %v", e.ID, e.SecurityGroups)
			}
		}
		c := condition(h.get("sg"), v1alpha1.ConditionSelectionChanged)
		return c != nil && c.Status == metav1.ConditionFalse, spew(c)
	})
}

// A second subnet tagged to match the subnetSelector in a zone whose
// subnet is in use does not join it: no ENI there, status.subnets (and so
// the generated attachment definitions' names) unchanged, not Degraded.
// The subnet in use, once it stops matching, keeps its ENI. Both are said
// in SelectionChanged; a change of the subnet sources applies the
// resolution.
func TestTaggedSubnetDoesNotJoinARunningZone(t *testing.T) {
	h, _ := nodesHarness(t, 1, "subnets")
	inUse, tagged := h.Subnets["multus-a"], h.Subnets["storage-a"]
	h.tagResource(inUse, map[string]string{"net": "data"})
	h.start(h.selectionOptions())
	spec := h.spec(map[string]string{"ng": "subnets"})
	spec.SubnetSelector = []v1alpha1.SubnetSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "data"}}}
	spec.SecurityGroupIDs = []string{h.Groups["multus"]}
	h.createNodeENI("subnets", spec)
	before := h.ready("subnets", 1).Status.Subnets
	running := ids(h)

	h.tagResource(tagged, map[string]string{"net": "data"})
	h.passes()
	unchanged := func() {
		t.Helper()
		ne := h.get("subnets")
		if now := ids(h); !slices.Equal(now, running) || h.calls("CreateNetworkInterface") != 0 {
			t.Fatalf("ENIs %v, before %v; %d creates", now, running, h.calls("CreateNetworkInterface"))
		}
		if !slices.Equal(ne.Status.Subnets, before) {
			t.Fatalf("status.subnets %+v; before %+v", ne.Status.Subnets, before)
		}
		if d := condition(ne, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
			t.Fatalf("degraded: %s", spew(d))
		}
	}
	unchanged()
	h.selectionSaid("subnets", eniplan.ReasonSubnetsChanged, tagged)

	h.tagResource(inUse, map[string]string{"net": "other"})
	h.passes()
	unchanged()
	h.selectionSaid("subnets", eniplan.ReasonSubnetsChanged, tagged, inUse)

	h.update("subnets", func(s *v1alpha1.NodeENISpec) {
		s.SubnetSelector[0].Tags["net"] = "*"
	})
	h.eventually("the spec change applies both subnets", waitFor, func() (bool, string) {
		ne := h.get("subnets")
		c := condition(ne, v1alpha1.ConditionSelectionChanged)
		return len(h.enis()) == 2 && len(ne.Status.Subnets) == 2 && c != nil && c.Status == metav1.ConditionFalse,
			fmt.Sprintf("%d ENIs, subnets %+v, %s", len(h.enis()), ne.Status.Subnets, spew(c))
	})
	h.ready("subnets", 1)
}

// After an upgrade, ENIs without a record keep the groups they carry: a
// group tagged to match while the earlier version ran is not put on them.
func TestUpgradePinsENIsToTheGroupsTheyCarry(t *testing.T) {
	h, names := nodesHarness(t, 1, "pinup")
	multus, open := h.Groups["multus"], h.Groups["storage"]
	h.tagResource(multus, map[string]string{"net": "data"})
	m := h.start(h.selectionOptions())
	spec := h.spec(map[string]string{"ng": "pinup"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupSelector = []v1alpha1.SecurityGroupSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "data"}}}
	h.createNodeENI("pinup", spec)
	h.ready("pinup", 1)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	// What an earlier version left: entries without a selection record.
	en := &v1alpha1.ENINode{}
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: names[0]}, en); err != nil {
		t.Fatal(err)
	}
	for i := range en.Spec.Attachments {
		en.Spec.Attachments[i].Selection = nil
	}
	if err := h.k8s.Update(context.Background(), en); err != nil {
		t.Fatal(err)
	}
	h.tagResource(open, map[string]string{"net": "data"})

	h.start(h.selectionOptions())
	h.passes()
	for _, e := range h.enis() {
		if !slices.Equal(e.SecurityGroups, []string{multus}) {
			t.Fatalf("ENI %s of the earlier version now has groups %v; want [%s]", e.ID, e.SecurityGroups, multus)
		}
	}
	h.selectionSaid("pinup", eniplan.ReasonSecurityGroupsChanged, open)
	h.eventually("the record written", waitFor, func() (bool, string) {
		as := h.attachments("pinup")
		ok := len(as) == 1 && as[0].Selection != nil && slices.Equal(as[0].Selection.SecurityGroups, []string{multus})
		return ok, fmt.Sprintf("%+v", as)
	})
}
