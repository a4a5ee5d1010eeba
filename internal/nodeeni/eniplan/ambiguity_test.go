package eniplan

import (
	"slices"
	"strings"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// A name that matches more than one subnet of a zone, or more than one
// security group, is refused as ambiguous: whoever may tag a subnet or
// group could otherwise multiply what a name means. One subnet per zone
// under one name (the usual per-zone naming) is still one subnet per zone.
func TestAmbiguousNameIsRefusedNotMultiplied(t *testing.T) {
	named := func(id, zone, name string) awstypes.Subnet {
		return awstypes.Subnet{ID: id, AvailabilityZone: zone, Tags: map[string]string{"Name": name}}
	}
	subnets := []awstypes.Subnet{
		named("subnet-1", "a", "multus"), named("subnet-2", "b", "multus"),
		named("subnet-3", "a", "copied"), named("subnet-4", "a", "copied"), named("subnet-5", "b", "copied"),
	}
	groups := []awstypes.SecurityGroup{{ID: "sg-1", Name: "multus"}, {ID: "sg-2", Name: "twin"}, {ID: "sg-3", Name: "twin"}}
	cases := []struct {
		name     string
		spec     v1alpha1.NodeENISpec
		subnets  []string
		groups   []string // nil: refused
		complete bool
		problem  string // in the AmbiguousName problem's message; "" none
	}{
		{name: "one subnet per zone under one name is fine",
			spec:    v1alpha1.NodeENISpec{SubnetName: "multus", SecurityGroupNames: []string{"multus"}},
			subnets: []string{"subnet-1", "subnet-2"}, groups: []string{"sg-1"}, complete: true},
		{name: "two subnets of one zone under one name: none taken from the name",
			spec:    v1alpha1.NodeENISpec{SubnetNames: []string{"multus", "copied"}, SecurityGroupNames: []string{"multus"}},
			subnets: []string{"subnet-1", "subnet-2"}, groups: []string{"sg-1"}, problem: `subnet name "copied" matches 2 subnets in zone a (subnet-3, subnet-4)`},
		{name: "two groups under one name in securityGroupNames",
			spec:    v1alpha1.NodeENISpec{SubnetName: "multus", SecurityGroupNames: []string{"multus", "twin"}},
			subnets: []string{"subnet-1", "subnet-2"}, complete: true, problem: `security group name "twin" matches 2 groups (sg-2, sg-3)`},
		{name: "two groups under one name in a selector term",
			spec:    v1alpha1.NodeENISpec{SubnetName: "multus", SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Name: "twin"}}},
			subnets: []string{"subnet-1", "subnet-2"}, complete: true, problem: `securityGroupSelector[0] (name "twin") matches 2 groups (sg-2, sg-3)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ResolveIn(subnets, groups, &c.spec)
			checkResolved(t, r, c.subnets, c.groups)
			if r.SubnetsComplete != c.complete {
				t.Fatalf("complete %v; want %v", r.SubnetsComplete, c.complete)
			}
			var found []Blocked
			for _, p := range r.Problems {
				if p.Reason == ReasonAmbiguousName {
					found = append(found, p)
				}
			}
			if c.problem == "" {
				if len(r.Problems) != 0 {
					t.Fatalf("problems %+v", r.Problems)
				}
				return
			}
			if len(found) != 1 || !strings.Contains(found[0].Message, c.problem) || !strings.Contains(found[0].Message, "IDs") {
				t.Fatalf("problems %+v; want one %s containing %q and saying to use IDs", r.Problems, ReasonAmbiguousName, c.problem)
			}
		})
	}
}

// An ambiguous name is a NodeENI-wide problem, said on every matching
// node; an ambiguous group name does not hide that a node's zone has no
// subnet.
func TestAmbiguousNameIsSaidOnEveryNode(t *testing.T) {
	blocks := []Blocked{
		{Reason: ReasonAmbiguousName, Message: "security group name x matches 2 groups", group: true},
		{Node: "n1", Reason: ReasonNoSubnetInZone, Message: "none"},
	}
	out := RootCauses(blocks, map[string]string{"n0": "i-0", "n1": "i-1"}, true)
	var got []string
	for _, b := range out {
		got = append(got, b.Node+":"+b.Reason)
	}
	slices.Sort(got)
	want := []string{"n0:" + ReasonAmbiguousName, "n1:" + ReasonAmbiguousName, "n1:" + ReasonNoSubnetInZone}
	if !slices.Equal(got, want) {
		t.Fatalf("%v; want %v", got, want)
	}
}
