package eniplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

func pin(hash string, groups, subnets []string) v1alpha1.ENISelection {
	return v1alpha1.ENISelection{SpecHash: hash, SecurityGroups: groups, ZoneSubnets: subnets}
}

// Drift repair moves an ENI's groups back to those it was given while
// the spec's sources are unchanged; only a changed spec applies the
// resolution; an ENI of an earlier version (no record) keeps what it has.
func TestDriftRepairKeepsTheRecordedGroups(t *testing.T) {
	cases := []struct {
		name   string
		pins   map[string]v1alpha1.ENISelection
		carry  []string
		action string // groups set, "" none
	}{
		{"record under the spec: a tagged group is not added", map[string]v1alpha1.ENISelection{"e1": pin("h", []string{"sg-1"}, nil)}, []string{"sg-1"}, ""},
		{"record under the spec: someone's change is put back", map[string]v1alpha1.ENISelection{"e1": pin("h", []string{"sg-1"}, nil)}, []string{"sg-x"}, "sg-1"},
		{"record under another spec: the resolution applies", map[string]v1alpha1.ENISelection{"e1": pin("old", []string{"sg-1"}, nil)}, []string{"sg-1"}, "sg-1,sg-open"},
		{"no record (earlier version): pinned to what it carries", nil, []string{"sg-1"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := baseInput()
			in.SelectionHash, in.Pins, in.SecurityGroups = "h", c.pins, []string{"sg-1", "sg-open"}
			o := eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)
			o.SecurityGroups = c.carry
			var got string
			for _, a := range Drift(in, o) {
				if a.Kind == ActSetGroups {
					got = strings.Join(a.Groups, ",")
				}
			}
			if got != c.action {
				t.Fatalf("set-security-groups %q; want %q", got, c.action)
			}
		})
	}
}

// A zone with ENIs keeps the subnets it was given while the spec is
// unchanged; a zone without any takes the resolution (new capacity).
func TestZonePinsHoldUntilTheSpecChanges(t *testing.T) {
	zoneOf := map[string]string{"s-a": "a", "s-a2": "a", "s-b": "b", "s-c": "c"}
	at := func(id, subnet string) Owned {
		return eni(id, "n-"+id, "i-"+id, subnet, 1, 1, "attached", true)
	}
	cases := []struct {
		name string
		enis []Owned
		pins map[string]v1alpha1.ENISelection
		want string
	}{
		{"no ENI: nothing pinned", nil, nil, "map[]"},
		{"record under the spec: its zone's subnets", []Owned{at("e1", "s-a")},
			map[string]v1alpha1.ENISelection{"e1": pin("h", nil, []string{"s-a"})}, "map[a:[s-a]]"},
		{"record under another spec: the resolution", []Owned{at("e1", "s-a")},
			map[string]v1alpha1.ENISelection{"e1": pin("old", nil, []string{"s-a"})}, "map[]"},
		{"no record (earlier version, or a crash before the record): the resolution", []Owned{at("e1", "s-a"), at("e2", "s-c")}, nil, "map[]"},
		{"records win over ENIs without one in their zone", []Owned{at("e1", "s-a"), at("e2", "s-a2")},
			map[string]v1alpha1.ENISelection{"e1": pin("h", nil, []string{"s-a"})}, "map[a:[s-a]]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fmt.Sprint(ZonePins(c.enis, c.pins, "h", zoneOf)); got != c.want {
				t.Fatalf("%s; want %s", got, c.want)
			}
		})
	}
}

// A pinned zone's subnets are its pin, in the pin's order, whatever the
// resolution says there; other zones take the resolution.
func TestPinnedZoneKeepsItsSubnets(t *testing.T) {
	all := []awstypes.Subnet{{ID: "s-a", AvailabilityZone: "a"}, {ID: "s-new", AvailabilityZone: "a"}, {ID: "s-old", AvailabilityZone: "a"},
		{ID: "s-b", AvailabilityZone: "b"}, {ID: "s-v4", AvailabilityZone: "c"}}
	resolved := []SubnetInfo{{ID: "s-new", Zone: "a"}, {ID: "s-a", Zone: "a"}, {ID: "s-b", Zone: "b"}}
	pins := map[string][]string{"a": {"s-a", "s-old", "s-gone"}, "c": {"s-v4"}}
	if got := SubnetIDs(PinSubnets(resolved, all, pins, false)); !slices.Equal(got, []string{"s-a", "s-old", "s-b", "s-v4"}) {
		t.Fatalf("%v", got)
	}
	if got := SubnetIDs(PinSubnets(resolved, all, pins, true)); !slices.Equal(got, []string{"s-b"}) {
		t.Fatalf("IPv6 asked: %v", got)
	}
}

// The entry records what the ENI keeps: the groups and its zone's
// subnets, under the current spec; under a changed spec whose resolution
// is not complete the old record stays.
func TestSelectionRecord(t *testing.T) {
	in := baseInput()
	in.SelectionHash, in.SecurityGroups = "h", []string{"sg-1", "sg-new"}
	in.ZoneSubnets, in.SubnetZones = map[string][]string{"z": {"s-a", "s-b"}}, map[string]string{"s-a": "z"}
	o := eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)
	for _, c := range []struct {
		name string
		pins map[string]v1alpha1.ENISelection
		edit func(*PlanInput)
		want string
	}{
		{"new or earlier ENI: what it carries", nil, nil, "h [sg-1] [s-a s-b]"},
		{"record under the spec: kept", map[string]v1alpha1.ENISelection{"e1": pin("h", []string{"sg-0"}, []string{"s-a"})}, nil, "h [sg-0] [s-a s-b]"},
		{"changed spec: the resolution", map[string]v1alpha1.ENISelection{"e1": pin("old", []string{"sg-0"}, []string{"s-a"})}, nil, "h [sg-1 sg-new] [s-a s-b]"},
		{"changed spec, groups unresolved: the old record", map[string]v1alpha1.ENISelection{"e1": pin("old", []string{"sg-0"}, []string{"s-a"})},
			func(in *PlanInput) { in.SecurityGroups = nil }, "old [sg-0] [s-a]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := in
			in.Pins = c.pins
			if c.edit != nil {
				c.edit(&in)
			}
			s := in.SelectionOf(o)
			if got := fmt.Sprint(s.SpecHash, " ", s.SecurityGroups, " ", s.ZoneSubnets); got != c.want {
				t.Fatalf("%s; want %s", got, c.want)
			}
		})
	}
}

// The condition names what the resolution adds and drops, and says the
// running ENIs keep theirs; nothing differing is False.
func TestSelectionChangedCondition(t *testing.T) {
	in := baseInput()
	in.SelectionHash, in.SecurityGroups = "h", []string{"sg-1", "sg-open"}
	in.Resolved = []SubnetInfo{{ID: "s-new", Zone: "z"}}
	in.Subnets = []SubnetInfo{{ID: "s-a", Zone: "z"}}
	in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
	in.Pins = map[string]v1alpha1.ENISelection{"e1": pin("h", []string{"sg-1"}, []string{"s-a"})}
	c := SelectionCondition(DiffSelection(in), 3)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonSubnetsAndSecurityGroupsChanged || c.ObservedGeneration != 3 {
		t.Fatalf("%+v", c)
	}
	for _, s := range []string{"new subnets s-new", "subnets no longer selected s-a", "new security groups sg-open", "keep their subnets and security groups until"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("message %q lacks %q", c.Message, s)
		}
	}
	in.Resolved, in.SecurityGroups = in.Subnets, []string{"sg-1"}
	if c := SelectionCondition(DiffSelection(in), 3); c.Status != metav1.ConditionFalse || c.Reason != ReasonSelectionUnchanged {
		t.Fatalf("%+v", c)
	}
}

// The digest changes with every subnet or group source and with nothing
// else.
func TestSelectionHashCoversTheSources(t *testing.T) {
	base := v1alpha1.NodeENISpec{SubnetNames: []string{"a"}, SecurityGroupNames: []string{"g"}}
	h := SelectionHash(&base)
	other := base
	other.Description, other.DeviceIndex = "x", 3
	if SelectionHash(&other) != h {
		t.Fatal("a field outside the sources changed the digest")
	}
	for _, edit := range []func(*v1alpha1.NodeENISpec){
		func(s *v1alpha1.NodeENISpec) { s.SubnetID = "subnet-1" },
		func(s *v1alpha1.NodeENISpec) { s.SubnetIDs = []string{"subnet-1"} },
		func(s *v1alpha1.NodeENISpec) { s.SubnetName = "b" },
		func(s *v1alpha1.NodeENISpec) { s.SubnetNames = []string{"b"} },
		func(s *v1alpha1.NodeENISpec) {
			s.SubnetSelector = []v1alpha1.SubnetSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"k": "*"}}}
		},
		func(s *v1alpha1.NodeENISpec) { s.SecurityGroupIDs = []string{"sg-1"} },
		func(s *v1alpha1.NodeENISpec) { s.SecurityGroupNames = []string{"h"} },
		func(s *v1alpha1.NodeENISpec) {
			s.SecurityGroupSelector = []v1alpha1.SecurityGroupSelectorTerm{{Name: "g"}}
		},
	} {
		s := base
		edit(&s)
		if SelectionHash(&s) == h {
			t.Errorf("%+v: same digest", s)
		}
	}
}
