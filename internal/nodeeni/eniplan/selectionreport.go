package eniplan

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Reasons of the SelectionChanged condition.
const (
	ReasonSubnetsChanged                  = "SubnetsChanged"
	ReasonSecurityGroupsChanged           = "SecurityGroupsChanged"
	ReasonSubnetsAndSecurityGroupsChanged = "SubnetsAndSecurityGroupsChanged"
	ReasonSelectionUnchanged              = "Unchanged"
)

// selectionDiff is how the current resolution differs from what the
// running ENIs keep (selection.go).
type selectionDiff struct {
	newSubnets, droppedSubnets, newGroups, droppedGroups []string
}

func (d selectionDiff) empty() bool {
	return len(d.newSubnets)+len(d.droppedSubnets)+len(d.newGroups)+len(d.droppedGroups) == 0
}

// DiffSelection compares the resolution (subnets, and groups unless
// unresolved) with the subnets in force and the groups each ENI keeps.
func DiffSelection(in PlanInput) selectionDiff {
	var d selectionDiff
	now, kept := SubnetIDs(in.Resolved), SubnetIDs(in.Subnets)
	d.newSubnets, d.droppedSubnets = minus(now, kept), minus(kept, now)
	if in.SecurityGroups == nil {
		return d
	}
	for _, o := range in.ENIs {
		g := in.groupsOf(o)
		d.newGroups = union(d.newGroups, minus(in.SecurityGroups, g)...)
		d.droppedGroups = union(d.droppedGroups, minus(g, in.SecurityGroups)...)
	}
	slices.Sort(d.newGroups)
	slices.Sort(d.droppedGroups)
	return d
}

func SubnetIDs(ss []SubnetInfo) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

// minus is a without b, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// SelectionCondition says whether the running ENIs keep a selection the
// spec's sources no longer resolve to, and which.
func SelectionCondition(d selectionDiff, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionSelectionChanged, ObservedGeneration: generation}
	if d.empty() {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonSelectionUnchanged
		return c
	}
	subnets, groups := len(d.newSubnets)+len(d.droppedSubnets) > 0, len(d.newGroups)+len(d.droppedGroups) > 0
	c.Status, c.Reason = metav1.ConditionTrue, ReasonSubnetsAndSecurityGroupsChanged
	switch {
	case !groups:
		c.Reason = ReasonSubnetsChanged
	case !subnets:
		c.Reason = ReasonSecurityGroupsChanged
	}
	var parts []string
	for _, p := range []struct {
		what string
		ids  []string
	}{{"new subnets", d.newSubnets}, {"subnets no longer selected", d.droppedSubnets},
		{"new security groups", d.newGroups}, {"security groups no longer selected", d.droppedGroups}} {
		if len(p.ids) > 0 {
			parts = append(parts, p.what+" "+bounded.List(p.ids, ", ", bounded.Items))
		}
	}
	c.Message = bounded.Truncate(fmt.Sprintf("the subnet and security-group sources now resolve otherwise than when the running ENIs were given theirs (%s); "+
		"existing ENIs keep their subnets and security groups until a subnet or security-group field of the spec changes; new ENIs get the new security groups, and zones without ENIs the new subnets",
		strings.Join(parts, "; ")), bounded.Message)
	return c
}
