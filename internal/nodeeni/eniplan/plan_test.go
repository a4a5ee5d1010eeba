package eniplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

func TestMayBeUnseen(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name                string
		createdAt, answered time.Time
		want                bool
	}{
		{"created moments ago", ago(3 * time.Second), time.Time{}, true},
		{"answered moments ago, first attempt long ago", ago(time.Hour), ago(time.Second), true},
		{"created long ago, no answer in this process", ago(10 * time.Minute), time.Time{}, false},
		{"both long ago", ago(10 * time.Minute), ago(5 * time.Minute), false},
		{"exactly at the window's end", ago(VisibilityWindow), time.Time{}, false},
		{"nothing known", time.Time{}, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayBeUnseen(now, tc.createdAt, tc.answered); got != tc.want {
				t.Errorf("mayBeUnseen = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClientToken(t *testing.T) {
	tok := ClientToken("nonce-1")
	if len(tok) > 64 || tok != ClientToken("nonce-1") || tok == ClientToken("nonce-2") {
		t.Fatalf("token %q: want at most EC2's 64 characters, one per nonce", tok)
	}
}

func TestChooseIndex(t *testing.T) {
	cases := []struct {
		name             string
		base, rank, pref int
		taken            map[int]Occupant
		want             int
		reason           string
	}{
		{"natural index", 1, 0, -1, map[int]Occupant{0: Foreign}, 1, ""},
		{"second subnet", 2, 1, -1, map[int]Occupant{0: Foreign, 2: Sibling}, 3, ""},
		{"preferred from the tag wins", 1, 0, 3, nil, 3, ""},
		{"preferred below base is ignored", 2, 0, 1, nil, 2, ""},
		{"sibling holds it: next free from base", 1, 0, -1, map[int]Occupant{1: Sibling, 2: Foreign, 3: Sibling}, 4, ""},
		{"taken by someone else", 1, 0, -1, map[int]Occupant{1: Foreign}, 1, ReasonDeviceIndexInUse},
		{"held by a leaving ENI", 1, 0, -1, map[int]Occupant{1: Leaving}, 1, ReasonWaitingForDetach},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason, _ := ChooseIndex(c.base, c.rank, c.pref, c.taken)
			if got != c.want || reason != c.reason {
				t.Fatalf("chooseIndex = %d, %q; want %d, %q", got, reason, c.want, c.reason)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	nodes := []awsnode.Identity{{Name: "b", Instance: "i-b", Zone: "z2"}, {Name: "a", Instance: "i-a", Zone: "z1"}, {Name: "c", Instance: "i-c", Zone: "z3"}}
	subnets := []SubnetInfo{{ID: "s1", Zone: "z1"}, {ID: "s2", Zone: "z2"}, {ID: "s3", Zone: "z1"}}
	wants, blocks := Desired(nodes, subnets)
	got := fmt.Sprint(wants)
	want := fmt.Sprint([]Want{
		{Node: "a", Instance: "i-a", Zone: "z1", Subnet: "s1", Rank: 0},
		{Node: "a", Instance: "i-a", Zone: "z1", Subnet: "s3", Rank: 1},
		{Node: "b", Instance: "i-b", Zone: "z2", Subnet: "s2", Rank: 0},
	})
	if got != want {
		t.Fatalf("wants\n%s\nwant\n%s", got, want)
	}
	if len(blocks) != 1 || blocks[0].Node != "c" || blocks[0].Reason != ReasonNoSubnetInZone {
		t.Fatalf("blocks %+v", blocks)
	}
}

// eni builds an owned ENI for plan tests.
func eni(id, node, instance, subnet string, base, index int, attached string, dot bool) Owned {
	e := awstypes.ENI{ID: id, SubnetID: subnet, Status: "available", SecurityGroups: []string{"sg-1"}, Description: "d",
		Tags: map[string]string{TagNodeENIUID: "uid", TagNode: node, TagInstance: instance,
			TagDeviceIndexBase: fmt.Sprint(base), TagDeviceIndex: fmt.Sprint(index)}}
	if attached != "" {
		e.Status = "in-use"
		e.Attachment = &awstypes.Attachment{ID: "attach-" + id, InstanceID: instance, DeviceIndex: index, Status: attached, DeleteOnTermination: dot}
	}
	return OwnedFrom(e)
}

func baseInput() PlanInput {
	return PlanInput{
		Base: 1, DeleteOnTermination: true, SecurityGroups: []string{"sg-1"}, Description: "d", SubnetsComplete: true,
		Wants: []Want{
			{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-a", Rank: 0},
			{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-b", Rank: 1},
		},
		Nodes:         map[string]bool{"n1": true, "n2": true},
		NodeInstances: map[string]string{"n1": "i-1"},
	}
}

func roomy() map[string]InstanceView {
	return map[string]InstanceView{"i-1": {ID: "i-1", Type: "m5.xlarge", State: "running", Zone: "z", MaxENIs: 4, Slots: map[int]string{0: "eni-primary"}}}
}

// describePlan renders actions and blocks compactly for comparison.
func describePlan(p Plan) string {
	var out []string
	for _, a := range p.Actions {
		s := a.Kind.String()
		switch a.Kind {
		case ActCreate:
			s += fmt.Sprintf(" %s/%s@%d", a.Want.Node, a.Want.Subnet, a.Index)
		case ActAttach:
			s += fmt.Sprintf(" %s@%d", a.ENI, a.Index)
		default:
			s += " " + a.ENI
		}
		if a.Reason != "" {
			s += " (" + a.Reason + ")"
		}
		out = append(out, s)
	}
	for _, b := range p.Blocked {
		out = append(out, "blocked "+b.Node+" "+b.Reason)
	}
	if len(p.NeedInstances) > 0 {
		out = append(out, "need "+strings.Join(p.NeedInstances, ","))
	}
	return strings.Join(out, "; ")
}

func TestMakePlan(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(in *PlanInput)
		want  string
		ready int
	}{
		{"nothing yet, instance unknown: describe it first", func(in *PlanInput) {}, "need i-1", 0},
		{"nothing yet: create both at consecutive indexes", func(in *PlanInput) { in.Instances = roomy() }, "create n1/s-a@1; create n1/s-b@2", 0},
		{"all attached: nothing to do", func(in *PlanInput) {
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true), eni("e2", "n1", "i-1", "s-b", 1, 2, "attached", true)}
		}, "", 1},
		{"drift is fixed in place", func(in *PlanInput) {
			e1 := eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", false)
			e1.SecurityGroups, e1.Description = []string{"sg-old"}, "old"
			// Given sg-1 under the current spec: someone changed it since.
			in.Pins = map[string]v1alpha1.ENISelection{"e1": {SecurityGroups: []string{"sg-1"}}}
			in.Tags = map[string]string{"Team": "net"}
			in.ENIs = []Owned{e1, eni("e2", "n1", "i-1", "s-b", 1, 2, "attached", true)}
		}, "set-security-groups e1; set-description e1; set-tags e1; set-delete-on-termination e1; set-tags e2", 1},
		{"created before a crash: attach where it was meant to go", func(in *PlanInput) {
			in.Instances = roomy()
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 3, "", false), eni("e2", "n1", "i-1", "s-b", 1, 2, "attached", true)}
		}, "attach e1@3", 0},
		{"node gone, unmatched, subnet removed: detach, wait, delete", func(in *PlanInput) {
			in.Wants = in.Wants[:1]
			in.ENIs = []Owned{
				eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true),
				eni("e2", "n1", "i-1", "s-b", 1, 2, "attached", true),  // subnet removed
				eni("e3", "n2", "i-2", "s-a", 1, 1, "detaching", true), // unmatched node
				eni("e4", "n3", "i-3", "s-a", 1, 1, "", true),          // deleted node
			}
		}, "detach e2 (SubnetRemoved); poll e3 (NodeUnmatched); delete e4 (NodeDeleted)", 1},
		{"subnets not all resolved: keep ENIs of unknown subnets", func(in *PlanInput) {
			in.Wants, in.SubnetsComplete = in.Wants[:1], false
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true), eni("e2", "n1", "i-1", "s-b", 1, 2, "attached", true)}
		}, "", 1},
		{"NodeENI deleted: everything goes", func(in *PlanInput) {
			in.Deleting, in.Wants = true, nil
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true), eni("e2", "n1", "i-1", "s-b", 1, 2, "", true)}
		}, "detach e1 (NodeENIDeleted); delete e2 (NodeENIDeleted)", 0},
		{"deviceIndex changed, room for both: create the new one first, keep the old", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = roomy()
			in.Instances["i-1"].Slots[1] = "e1"
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "create n1/s-a@2", 0},
		{"duplicate: keep the attached one", func(in *PlanInput) {
			in.Wants = in.Wants[:1]
			in.ENIs = []Owned{eni("e0", "n1", "i-1", "s-a", 1, 1, "", true), eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "delete e0 (Duplicate)", 1},
		{"instance replaced under the node name", func(in *PlanInput) {
			in.Wants = in.Wants[:1]
			in.Instances = roomy()
			in.ENIs = []Owned{eni("e1", "n1", "i-old", "s-a", 1, 1, "", true)}
		}, "delete e1 (InstanceReplaced); create n1/s-a@1", 0},
		{"groups unresolved: no create", func(in *PlanInput) { in.SecurityGroups, in.Instances = nil, roomy() }, "", 0},
		{"instance full", func(in *PlanInput) {
			in.Instances = roomy()
			in.Instances["i-1"] = InstanceView{ID: "i-1", Type: "t3.small", State: "running", MaxENIs: 3, Slots: map[int]string{0: "p", 1: "x", 2: "y"}}
		}, "blocked n1 ENILimitReached; blocked n1 ENILimitReached", 0},
		{"index held by someone else", func(in *PlanInput) {
			in.Wants = in.Wants[:1]
			in.Instances = roomy()
			in.Instances["i-1"].Slots[1] = "eni-foreign"
		}, "blocked n1 DeviceIndexInUse", 0},
		{"index beyond the type", func(in *PlanInput) {
			in.Base, in.Wants = 3, in.Wants[:1]
			in.Instances = map[string]InstanceView{"i-1": {ID: "i-1", Type: "t3.small", State: "running", MaxENIs: 3, Slots: map[int]string{0: "p"}}}
		}, "blocked n1 DeviceIndexBeyondLimit", 0},
		{"instance terminated", func(in *PlanInput) {
			in.Instances = map[string]InstanceView{"i-1": {ID: "i-1", State: "terminated"}}
		}, "blocked n1 InstanceNotRunning; blocked n1 InstanceNotRunning", 0},
		{"zone label wrong", func(in *PlanInput) {
			in.Wants = in.Wants[:1]
			in.Instances = roomy()
			in.Instances["i-1"] = InstanceView{ID: "i-1", State: "running", Zone: "other", MaxENIs: 4, Slots: map[int]string{0: "p"}}
		}, "blocked n1 ZoneMismatch", 0},
		{"full only until a leaving ENI is gone", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = map[string]InstanceView{"i-1": {ID: "i-1", State: "running", MaxENIs: 2, Slots: map[int]string{0: "p", 1: "e1"}}}
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "detaching", true)}
		}, "poll e1 (DeviceIndexChanged); blocked n1 WaitingForDetach", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkPlan(t, c.edit, c.want, c.ready)
		})
	}
}

// TestMakePlanMakeBeforeBreak: an ENI superseded by a spec change
// (deviceIndex or subnets) on a node that is still matched, on the same
// instance, stays attached until its replacement is; it goes first only
// when the replacement needs its index or slot and can then be placed
// (a same-index swap necessarily has a gap); when the new spec cannot be
// met on the node, it stays and the node is reported with the reason.
func TestMakePlanMakeBeforeBreak(t *testing.T) {
	m5large := func(slots map[int]string) map[string]InstanceView {
		return map[string]InstanceView{"i-1": {ID: "i-1", Type: "m5.large", State: "running", Zone: "z", MaxENIs: 3, Slots: slots}}
	}
	old := func(subnet string, base, index int) Owned {
		return eni("e1", "n1", "i-1", subnet, base, index, "attached", true)
	}
	cases := []struct {
		name  string
		edit  func(in *PlanInput)
		want  string
		ready int
		// kept is an ENI that must stay attached in status with a "kept" message.
		kept string
	}{
		{"deviceIndex 1->2 with room: create first, old kept", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = m5large(map[int]string{0: "p", 1: "e1"})
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "create n1/s-a@2", 0, "e1"},
		{"deviceIndex 2->1 with index 1 free: create first, old kept", func(in *PlanInput) {
			in.Base, in.Wants = 1, in.Wants[:1]
			in.Instances = m5large(map[int]string{0: "p", 2: "e1"})
			in.ENIs = []Owned{old("s-a", 2, 2)}
		}, "create n1/s-a@1", 0, "e1"},
		{"replacement created but not attached yet: attach it, old kept", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = m5large(map[int]string{0: "p", 1: "e1"})
			in.ENIs = []Owned{old("s-a", 1, 1), eni("e2", "n1", "i-1", "s-a", 2, 2, "", true)}
		}, "attach e2@2", 0, "e1"},
		{"replacement attached: the old one goes", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.ENIs = []Owned{old("s-a", 1, 1), eni("e2", "n1", "i-1", "s-a", 2, 2, "attached", true)}
		}, "detach e1 (DeviceIndexChanged)", 1, ""},
		{"deviceIndex 2->3 beyond an m5.large: old kept, node degraded", func(in *PlanInput) {
			in.Base, in.Wants = 3, in.Wants[:1]
			in.Instances = m5large(map[int]string{0: "p", 2: "e1"})
			in.ENIs = []Owned{old("s-a", 2, 2)}
		}, "blocked n1 DeviceIndexBeyondLimit", 0, "e1"},
		{"new index held by a foreign interface: old kept, node degraded", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = roomy()
			in.Instances["i-1"].Slots[1], in.Instances["i-1"].Slots[2] = "e1", "eni-foreign"
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "blocked n1 DeviceIndexInUse", 0, "e1"},
		{"one of two new ENIs cannot be placed: nothing created, old kept", func(in *PlanInput) {
			in.Base = 2
			in.Instances = m5large(map[int]string{0: "p", 1: "e1"})
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "blocked n1 DeviceIndexBeyondLimit", 0, "e1"},
		{"instance full with the old ENI: placeable only once it leaves: swap", func(in *PlanInput) {
			in.Instances = m5large(map[int]string{0: "p", 1: "e0", 2: "e1"})
			in.ENIs = []Owned{eni("e0", "n1", "i-1", "s-a", 1, 1, "attached", true), old("s-x", 1, 2)}
		}, "detach e1 (SubnetRemoved); blocked n1 WaitingForDetach", 0, ""},
		{"subnet replaced at the same index: swap, with a gap", func(in *PlanInput) {
			in.Wants = []Want{{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-c", Rank: 0}}
			in.Instances = roomy()
			in.Instances["i-1"].Slots[1] = "e1"
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "detach e1 (SubnetRemoved); blocked n1 WaitingForDetach", 0, ""},
		{"subnet replaced, same index, but the new one could not be placed anyway: old kept", func(in *PlanInput) {
			in.Base = 3
			in.Wants = []Want{{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-c", Rank: 0}}
			in.Instances = m5large(map[int]string{0: "p", 2: "e1"})
			in.ENIs = []Owned{old("s-a", 2, 2)}
		}, "blocked n1 DeviceIndexBeyondLimit", 0, "e1"},
		{"no subnet in the node's zone (blocked by desired): old kept", func(in *PlanInput) {
			in.Wants = nil
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "", 0, "e1"},
		{"security groups not found: nothing created, old kept", func(in *PlanInput) {
			in.Base, in.Wants, in.SecurityGroups = 2, in.Wants[:1], nil
			in.Instances = roomy()
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "", 0, "e1"},
		{"instance not described yet: old kept meanwhile", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "need i-1", 0, "e1"},
		{"node unmatched: cleaned up as before", func(in *PlanInput) {
			in.Base, in.Wants, in.NodeInstances = 2, nil, map[string]string{}
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "detach e1 (NodeUnmatched)", 0, ""},
		{"node deleted: cleaned up as before", func(in *PlanInput) {
			in.Base, in.Wants, in.NodeInstances, in.Nodes = 2, nil, map[string]string{}, map[string]bool{}
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "detach e1 (NodeDeleted)", 0, ""},
		{"instance replaced: cleaned up as before", func(in *PlanInput) {
			in.Base, in.Wants = 2, []Want{{Node: "n1", Instance: "i-2", Zone: "z", Subnet: "s-a"}}
			in.NodeInstances = map[string]string{"n1": "i-2"}
			in.Instances = map[string]InstanceView{"i-2": {ID: "i-2", State: "running", Zone: "z", MaxENIs: 3, Slots: map[int]string{0: "p"}}}
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "detach e1 (InstanceReplaced); create n1/s-a@2", 0, ""},
		{"NodeENI deleted: cleaned up as before", func(in *PlanInput) {
			in.Base, in.Wants, in.Deleting = 2, nil, true
			in.ENIs = []Owned{old("s-a", 1, 1)}
		}, "detach e1 (NodeENIDeleted)", 0, ""},
		{"superseded ENI already detaching: removed as before", func(in *PlanInput) {
			in.Base, in.Wants = 2, in.Wants[:1]
			in.Instances = roomy()
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "detaching", true)}
		}, "poll e1 (DeviceIndexChanged); create n1/s-a@2", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkPlan(t, c.edit, c.want, c.ready)
			if c.kept == "" {
				return
			}
			for _, a := range p.Attachments {
				if a.ENIID == c.kept {
					if a.Status != v1alpha1.AttachmentAttached || !strings.Contains(a.Message, "kept") {
						t.Fatalf("kept ENI's status entry %+v", a)
					}
					return
				}
			}
			t.Fatalf("kept ENI %s missing from status %+v", c.kept, p.Attachments)
		})
	}
}

// checkPlan makes the plan of baseInput changed by edit and checks it
// reads want with ready nodes ready (and that describing instances first
// costs no extra calls); the plan is returned for further checks.
func checkPlan(t *testing.T, edit func(*PlanInput), want string, ready int) Plan {
	t.Helper()
	in := baseInput()
	edit(&in)
	checkInstancesToPlace(t, in)
	p := MakePlan(in)
	if got := describePlan(p); got != want {
		t.Fatalf("plan\n  %s\nwant\n  %s", got, want)
	}
	if p.ReadyNodes != ready {
		t.Fatalf("ready nodes %d, want %d", p.ReadyNodes, ready)
	}
	return p
}

// checkInstancesToPlace: the instances the controller describes before
// it plans are exactly those a plan made without them would ask for, so
// planning once after describing them costs no more calls than planning,
// describing and planning again.
func checkInstancesToPlace(t *testing.T, in PlanInput) {
	t.Helper()
	in.Instances = nil
	got, want := InstancesToPlace(in, Classify(in)), MakePlan(in).NeedInstances
	if !slices.Equal(got, want) {
		t.Fatalf("instancesToPlace %v, want the plan's NeedInstances %v", got, want)
	}
}

func TestResolveIn(t *testing.T) {
	subnets := []awstypes.Subnet{
		{ID: "subnet-1", AvailabilityZone: "a", CIDR: "10.0.0.0/24", Tags: map[string]string{"Name": "multus"}},
		{ID: "subnet-2", AvailabilityZone: "b", CIDR: "10.0.1.0/24", Tags: map[string]string{"Name": "multus"}},
		{ID: "subnet-3", AvailabilityZone: "a", CIDR: "10.0.2.0/24", Tags: map[string]string{"Name": "storage"}},
	}
	groups := []awstypes.SecurityGroup{{ID: "sg-2", Name: "multus"}, {ID: "sg-1", Name: "storage"}}
	r := ResolveIn(subnets, groups, &v1alpha1.NodeENISpec{SubnetID: "subnet-3", SubnetNames: []string{"multus", "storage"},
		SecurityGroupIDs: []string{"sg-2"}, SecurityGroupNames: []string{"storage", "multus"}})
	var ids []string
	for _, s := range r.Subnets {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"subnet-3", "subnet-1", "subnet-2"}) || !slices.Equal(r.Groups, []string{"sg-1", "sg-2"}) ||
		len(r.Problems) != 0 || !r.SubnetsComplete {
		t.Fatalf("resolved %+v", r)
	}
	r = ResolveIn(subnets, groups, &v1alpha1.NodeENISpec{SubnetIDs: []string{"subnet-9"}, SubnetName: "multus",
		SecurityGroupNames: []string{"nope"}})
	if r.SubnetsComplete || r.Groups != nil || len(r.Subnets) != 2 || len(r.Problems) != 2 ||
		r.Problems[0].Reason != ReasonSubnetNotFound || r.Problems[1].Reason != ReasonSecurityGroupNotFound {
		t.Fatalf("resolved %+v", r)
	}
}

func TestOrphans(t *testing.T) {
	now := time.Now()
	grace := time.Minute
	mk := func(id, uid string, created time.Time, attached bool) awstypes.ENI {
		e := awstypes.ENI{ID: id, Status: "available", Tags: map[string]string{TagNodeENIUID: uid}}
		if !created.IsZero() {
			e.Tags[TagCreatedAt] = created.Format(time.RFC3339)
		}
		if attached {
			e.Status, e.Attachment = "in-use", &awstypes.Attachment{ID: "a"}
		}
		return e
	}
	enis := []awstypes.ENI{
		mk("old", "dead", now.Add(-time.Hour), false),
		mk("young", "dead", time.Time{}, false),
		mk("live", "alive", now.Add(-time.Hour), false),
		mk("attached", "dead", now.Add(-time.Hour), true),
	}
	live := map[string]bool{"alive": true}
	seen := map[string]*Sighting{}
	snap1 := now.Add(-2 * time.Minute)
	if got := Orphans(Snapshot{ENIs: enis, Taken: snap1}, live, seen, now.Add(-2*time.Minute), grace); len(got) != 0 {
		t.Fatalf("first sighting deletes %v", got)
	}
	// The same snapshot again is not a second sighting.
	if got := Orphans(Snapshot{ENIs: enis, Taken: snap1}, live, seen, now.Add(-90*time.Second), grace); len(got) != 0 {
		t.Fatalf("same snapshot counted twice: %v", got)
	}
	got := Orphans(Snapshot{ENIs: enis, Taken: now.Add(-time.Second)}, live, seen, now, grace)
	if len(got) != 2 || got[0].ID != "old" || got[1].ID != "young" {
		t.Fatalf("second sighting past the grace period: %v", got)
	}
	// Adopted meanwhile (no longer orphaned): forgotten.
	Orphans(Snapshot{ENIs: enis[2:], Taken: now}, live, seen, now, grace)
	if len(seen) != 0 {
		t.Fatalf("sightings kept: %v", seen)
	}
	// Young: seen twice but within the grace period of its first sighting.
	seen = map[string]*Sighting{}
	Orphans(Snapshot{ENIs: enis[1:2], Taken: now}, live, seen, now, grace)
	if got := Orphans(Snapshot{ENIs: enis[1:2], Taken: now.Add(time.Second)}, live, seen, now.Add(2*time.Second), grace); len(got) != 0 {
		t.Fatalf("young orphan deleted within the grace period")
	}
}

func TestRoundsOf(t *testing.T) {
	acts := []Action{{Kind: ActProve, Node: "a", ENI: "1"}, {Kind: ActCreate, Node: "b"}, {Kind: ActAttach, Node: "a", ENI: "1"},
		{Kind: ActCreate, Node: "c"}, {Kind: ActDetach, Node: "b", ENI: "2"}}
	describe := func(rounds [][]Action) string {
		var parts []string
		for _, r := range rounds {
			var nodes []string
			for _, a := range r {
				nodes = append(nodes, a.Node+":"+ActionNames[a.Kind])
			}
			parts = append(parts, strings.Join(nodes, ","))
		}
		return strings.Join(parts, " | ")
	}
	for n, want := range map[int]string{
		1:   "a:prove,a:attach | b:create,b:detach | c:create",
		2:   "a:prove,a:attach,b:create,b:detach | c:create",
		100: "a:prove,a:attach,b:create,b:detach,c:create",
	} {
		if got := describe(RoundsOf(acts, n)); got != want {
			t.Errorf("rounds of %d nodes: %s, want %s", n, got, want)
		}
	}
	if got := RoundsOf(nil, 3); got != nil {
		t.Errorf("rounds of no action: %v", got)
	}
}
