package eniplan

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// originalENI is an ENI exactly as aws-multi-eni-controller leaves it:
// its tags, its default description, attached to node n1's instance at
// device index 1 with DeleteOnTermination.
func originalENI() awstypes.ENI {
	return awstypes.ENI{ID: "eni-1", SubnetID: "subnet-a", VPCID: "vpc-1", InterfaceType: "interface", Status: "in-use",
		Description: OriginalDescription("n1"), SecurityGroups: []string{"sg-1"},
		Attachment: &awstypes.Attachment{ID: "attach-1", InstanceID: "i-1", DeviceIndex: 1, Status: "attached", DeleteOnTermination: true},
		Tags: map[string]string{"Name": "nodeeni-multus-n1-subnet-a", OriginalTagNodeENI: "multus", OriginalTagNode: "n1",
			OriginalTagSubnet: "subnet-a", OriginalTagManagedBy: OriginalManagedBy, TagNoManage: "true"}}
}

func originalEvidence() AdoptionEvidence {
	return AdoptionEvidence{NodeENI: "multus",
		Subnets: map[string]string{"subnet-a": "vpc-1", "subnet-b": "vpc-1"},
		Nodes:   map[string]string{"n1": "i-1", "n2": "i-2", "fargate": ""},
		Records: map[string]v1alpha1.ENIAttachment{"eni-1": {NodeID: "n1", InstanceID: "i-1", ENIID: "eni-1", AttachmentID: "attach-1",
			SubnetID: "subnet-a", DeviceIndex: 1, Status: "attached"}},
	}
}

// TestNotAdoptable walks the adoption rule: the original's ENI, recorded
// in the NodeENI's status or carrying its default description, attached
// to its node's instance, is adopted; every other shape, and each thing an
// attacker holding only ec2:CreateTags or only the NodeENI's status can
// forge, is refused with its reason.
func TestNotAdoptable(t *testing.T) {
	noRecord := func(ev *AdoptionEvidence) { ev.Records = nil }
	cases := []struct {
		name   string
		eni    func(*awstypes.ENI)
		ev     func(*AdoptionEvidence)
		reason string
	}{
		{"as the original leaves it, recorded in status", nil, nil, ""},
		{"tags only, the original's default description", nil, noRecord, ""},
		{"tags only, the spec's description", func(e *awstypes.ENI) { e.Description = "multus net" },
			func(ev *AdoptionEvidence) { noRecord(ev); ev.Description = "multus net" }, ""},
		{"recorded, description changed since", func(e *awstypes.ENI) { e.Description = "old" }, nil, ""},
		{"recorded without a subnet", nil, func(ev *AdoptionEvidence) {
			r := ev.Records["eni-1"]
			r.SubnetID = ""
			ev.Records["eni-1"] = r
		}, ""},

		// Not what the original creates.
		{"branch ENI", func(e *awstypes.ENI) { e.InterfaceType = "branch" }, nil, NotAdoptedInterfaceType},
		{"type unknown", func(e *awstypes.ENI) { e.InterfaceType = "" }, nil, NotAdoptedInterfaceType},
		{"requester-managed", func(e *awstypes.ENI) { e.RequesterManaged = true }, nil, NotAdoptedRequesterManaged},
		{"another VPC", func(e *awstypes.ENI) {
			e.VPCID, e.SubnetID, e.Tags[OriginalTagSubnet] = "vpc-2", "subnet-x", "subnet-x"
		}, nil, NotAdoptedOtherVPC},
		{"VPC disagrees with its subnet", func(e *awstypes.ENI) { e.VPCID = "vpc-2" }, nil, NotAdoptedOtherVPC},
		// Another owner's tags: this operator's (half-adopted by someone
		// else, or another cluster's), the tagger's, the VPC CNI's, EKS's.
		{"this operator's tag", func(e *awstypes.ENI) { e.Tags[TagCluster] = "other" }, nil, NotAdoptedReservedTag},
		{"tagger hash", func(e *awstypes.ENI) { e.Tags["eni-tagger.io/hash"] = "x" }, nil, NotAdoptedReservedTag},
		{"VPC CNI ENI", func(e *awstypes.ENI) { e.Tags["node.k8s.amazonaws.com/instance_id"] = "i-1" }, nil, NotAdoptedReservedTag},
		{"EKS owner", func(e *awstypes.ENI) { e.Tags["eks:eni:owner"] = "amazon-vpc-cni" }, nil, NotAdoptedReservedTag},
		{"a cluster's ownership tag", func(e *awstypes.ENI) { e.Tags["kubernetes.io/cluster/prod"] = "owned" }, nil, NotAdoptedReservedTag},

		// The original's tags.
		{"managed-by missing", func(e *awstypes.ENI) { delete(e.Tags, OriginalTagManagedBy) }, nil, NotAdoptedOriginalTags},
		{"managed-by another controller", func(e *awstypes.ENI) { e.Tags[OriginalTagManagedBy] = "other" }, nil, NotAdoptedOriginalTags},
		{"another NodeENI's", func(e *awstypes.ENI) { e.Tags[OriginalTagNodeENI] = "storage" }, nil, NotAdoptedOriginalTags},
		{"node tag missing", func(e *awstypes.ENI) { delete(e.Tags, OriginalTagNode) }, nil, NotAdoptedOriginalTags},
		{"subnet tag disagrees", func(e *awstypes.ENI) { e.Tags[OriginalTagSubnet] = "subnet-b" }, nil, NotAdoptedOriginalTags},
		// Status alone: an entry naming an ENI that lacks the original's tags.
		{"status names an untagged ENI", func(e *awstypes.ENI) {
			e.Tags = map[string]string{"Name": "db-failover"}
		}, nil, NotAdoptedOriginalTags},

		// Where it is attached.
		{"node not in the cluster", func(e *awstypes.ENI) { e.Tags[OriginalTagNode] = "gone" }, nil, NotAdoptedUnknownNode},
		{"node not on EC2", func(e *awstypes.ENI) { e.Tags[OriginalTagNode] = "fargate" }, nil, NotAdoptedUnknownNode},
		{"detached", func(e *awstypes.ENI) { e.Attachment, e.Status = nil, "available" }, nil, NotAdoptedNotAttached},
		{"detached, tags only", func(e *awstypes.ENI) { e.Attachment, e.Status = nil, "available" }, noRecord, NotAdoptedNotAttached},
		{"detaching", func(e *awstypes.ENI) { e.Attachment.Status = "detaching" }, nil, NotAdoptedNotAttached},
		{"attaching", func(e *awstypes.ENI) { e.Attachment.Status = "attaching" }, nil, NotAdoptedNotAttached},
		{"attached to another instance", func(e *awstypes.ENI) { e.Attachment.InstanceID = "i-9" }, nil, NotAdoptedAttachedElsewhere},
		{"attached to another node's instance", func(e *awstypes.ENI) { e.Attachment.InstanceID = "i-2" }, nil, NotAdoptedAttachedElsewhere},
		{"tags only, attached elsewhere", func(e *awstypes.ENI) { e.Attachment.InstanceID = "i-9" }, noRecord, NotAdoptedAttachedElsewhere},
		{"the instance's primary interface", func(e *awstypes.ENI) { e.Attachment.DeviceIndex = 0 }, nil, NotAdoptedPrimary},

		// The second evidence.
		{"status names another node", nil, func(ev *AdoptionEvidence) {
			r := ev.Records["eni-1"]
			r.NodeID = "n2"
			ev.Records["eni-1"] = r
		}, NotAdoptedRecordMismatch},
		{"status names another instance", nil, func(ev *AdoptionEvidence) {
			r := ev.Records["eni-1"]
			r.InstanceID = "i-9"
			ev.Records["eni-1"] = r
		}, NotAdoptedRecordMismatch},
		{"status names another subnet", nil, func(ev *AdoptionEvidence) {
			r := ev.Records["eni-1"]
			r.SubnetID = "subnet-b"
			ev.Records["eni-1"] = r
		}, NotAdoptedRecordMismatch},
		// Tags copied onto someone's ENI on the node (an admin's, say):
		// its description gives it away.
		{"tags only, another description", func(e *awstypes.ENI) { e.Description = "db failover" }, noRecord, NotAdoptedNoSecondEvidence},
		{"tags only, empty description", func(e *awstypes.ENI) { e.Description = "" }, noRecord, NotAdoptedNoSecondEvidence},
		{"tags only, default description of another node", func(e *awstypes.ENI) { e.Description = OriginalDescription("n2") }, noRecord, NotAdoptedNoSecondEvidence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, ev := originalENI(), originalEvidence()
			if tc.eni != nil {
				tc.eni(&e)
			}
			if tc.ev != nil {
				tc.ev(&ev)
			}
			reason, detail := NotAdoptable(e, ev)
			if reason != tc.reason {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tc.reason)
			}
			if (reason == "") != (detail == "") {
				t.Errorf("reason %q with detail %q", reason, detail)
			}
		})
	}
}

// TestAdoption checks what adopting writes: one tag set, with every
// ownership tag, the index the ENI is attached at and the spec's tags it
// lacks, after which the ENI passes the trust check as the NodeENI's own
// and the plan keeps it where it is.
func TestAdoption(t *testing.T) {
	e := originalENI()
	e.Attachment.DeviceIndex = 3
	e.Tags["Team"] = "net"
	created := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	a, o := Adoption(e, OwnedBy{Cluster: "prod", NodeENI: "multus", UID: "uid-1", Base: 1, Created: created}, map[string]string{"Team": "net", "Cost": "42", "kubernetes.io/x": "y"})
	if a.Kind != ActAdopt || a.ENI != "eni-1" || a.Node != "n1" || a.Index != 3 {
		t.Fatalf("action %+v", a)
	}
	want := map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1", TagInstance: "i-1",
		TagDeviceIndex: "3", TagDeviceIndexBase: "1", TagCreatedAt: "2026-11-23T15:00:00Z", TagNoManage: "true", "Cost": "42"}
	if len(a.Tags) != len(want) {
		t.Errorf("tags %v, want %v", a.Tags, want)
	}
	for k, v := range want {
		if a.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, a.Tags[k], v)
		}
	}
	if reason, detail := DistrustShape(o.ENI, "prod", "multus"); reason != "" {
		t.Errorf("adopted ENI not trusted: %s: %s", reason, detail)
	}
	if o.Node != "n1" || o.Instance != "i-1" || o.Index != 3 || o.Base != 1 || o.Tags[OriginalTagNodeENI] != "multus" {
		t.Errorf("adopted ENI %+v", o)
	}
	if _, had := e.Tags[TagCluster]; had {
		t.Error("adoption changed the ENI it was given")
	}
	// Recorded: the spec's tag it wrote, not Team, which the ENI carried
	// already and may be another tool's; so dropping both from the spec
	// removes Cost alone.
	rec := HeldRecord(a.Tags, a.Tags)
	if !maps.Equal(rec, map[string]string{"Cost": "42"}) {
		t.Errorf("adoption records %v", rec)
	}
	if c := TagChanges(o.Tags, nil, rec); !maps.Equal(c.Remove, map[string]string{"Cost": "42"}) {
		t.Errorf("after the adoption, dropping the spec's tags removes %v", c.Remove)
	}
}

func TestNeedsOriginals(t *testing.T) {
	ours := []Owned{{ENI: awstypes.ENI{ID: "eni-1"}}, {ENI: awstypes.ENI{ID: "eni-2"}}}
	entries := func(ids ...string) []v1alpha1.ENIAttachment {
		var out []v1alpha1.ENIAttachment
		for _, id := range ids {
			out = append(out, v1alpha1.ENIAttachment{ENIID: id})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		st   v1alpha1.NodeENIStatus
		want bool
	}{
		{"the original's status", v1alpha1.NodeENIStatus{Attachments: entries("orig-1", "orig-9")}, true},
		{"the original's, without entries", v1alpha1.NodeENIStatus{}, true},
		{"steady state: every entry ours", v1alpha1.NodeENIStatus{ObservedGeneration: 3, Attachments: entries("eni-1", "eni-2")}, false},
		{"steady state: no entries", v1alpha1.NodeENIStatus{ObservedGeneration: 1}, false},
		{"an entry kept while its adoption is refused, or shown in dry-run", v1alpha1.NodeENIStatus{ObservedGeneration: 1, Attachments: entries("eni-1", "orig-9")}, true},
	} {
		if got := NeedsOriginals(tc.st, ours); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMakePlanAdopts: adopted ENIs are planned as the NodeENI's own, their
// adoptions first; one the spec wants is kept where it is (no create,
// attach, modify), one it no longer wants is removed after its adoption.
func TestMakePlanAdopts(t *testing.T) {
	in := baseInput()
	in.Description = ""
	in.Instances = roomy()
	mk := func(id, subnet string, idx int) awstypes.ENI {
		e := originalENI()
		e.ID, e.SubnetID, e.Tags[OriginalTagSubnet], e.Attachment.DeviceIndex = id, subnet, subnet, idx
		e.Attachment.ID = "attach-" + id
		return e
	}
	for _, e := range []awstypes.ENI{mk("eni-a", "s-a", 1), mk("eni-b", "s-b", 2), mk("eni-c", "s-c", 3)} {
		a, o := Adoption(e, OwnedBy{Cluster: "prod", NodeENI: "multus", UID: "uid", Base: in.Base, Created: time.Now()}, nil)
		in.Adopt = append(in.Adopt, a)
		in.ENIs = append(in.ENIs, o)
	}
	p := MakePlan(in)
	if got, want := describePlan(p), "adopt eni-a; adopt eni-b; adopt eni-c; detach eni-c (SubnetRemoved)"; got != want {
		t.Errorf("plan %q, want %q", got, want)
	}
	if p.ReadyNodes != 1 {
		t.Errorf("ready nodes %d, want 1", p.ReadyNodes)
	}
	var got []string
	for _, a := range p.Attachments {
		got = append(got, a.ENIID+"@"+string(rune('0'+a.DeviceIndex))+"/"+a.Status)
	}
	if s := strings.Join(got, " "); s != "eni-a@1/attached eni-b@2/attached eni-c@3/detaching" {
		t.Errorf("status %s", s)
	}
	// A spec description that differs is still set.
	in.Description = "multus"
	if got := describePlan(MakePlan(in)); !strings.Contains(got, "set-description eni-a") {
		t.Errorf("plan %q does not set the spec's description", got)
	}
}

func TestUnswitchedRecordsStayUntilTheNodesAgentReports(t *testing.T) {
	records := []v1alpha1.ENIAttachment{{ENIID: "eni-1", NodeID: "old-agent"}, {ENIID: "eni-2", NodeID: "new-agent"},
		{ENIID: "eni-3", NodeID: "old-agent"}, {ENIID: "eni-4", NodeID: "no-eninode"}}
	ours := []Owned{{ENI: awstypes.ENI{ID: "eni-1"}}, {ENI: awstypes.ENI{ID: "eni-2"}}, {ENI: awstypes.ENI{ID: "eni-4"}}}
	held := map[string]*v1alpha1.ENINode{
		"old-agent": {},
		"new-agent": {Status: v1alpha1.ENINodeStatus{Interfaces: []v1alpha1.InterfaceStatus{{ENIID: "eni-2"}}}},
	}
	evidence := []v1alpha1.ENIAttachment{records[2]}
	got := Unswitched(evidence, records, ours, held)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ENIID)
	}
	// eni-3: kept as evidence (once); eni-1 and eni-4: ours, their node's
	// agent has not reported in an ENINode; eni-2: its agent has.
	if want := []string{"eni-3", "eni-1", "eni-4"}; !slices.Equal(ids, want) {
		t.Errorf("kept %v, want %v", ids, want)
	}
	if got := Unswitched(nil, records, nil, held); got != nil {
		t.Errorf("kept %+v of ENIs no longer the NodeENI's", got)
	}
}

func TestLegacyRecords(t *testing.T) {
	records := []v1alpha1.ENIAttachment{{ENIID: "eni-1", NodeID: "n1"}, {ENIID: "eni-2", NodeID: "n1"},
		{ENIID: "eni-3", NodeID: "n2"}, {ENIID: "eni-4", NodeID: "n2"}}
	adopt := []Action{{Kind: ActAdopt, ENI: "eni-1"}, {Kind: ActAdopt, ENI: "eni-2"}}
	after := []Owned{{ENI: awstypes.ENI{ID: "eni-1"}}}
	prove := []Action{{Kind: ActProve, ENI: "eni-3"}}
	got := LegacyRecords(records, NotAdopted(adopt, after), prove)
	if len(got) != 2 || got[0].ENIID != "eni-2" || got[1].ENIID != "eni-3" {
		t.Errorf("records kept %+v, want eni-2's (adoption refused) and eni-3's (proof not written) only", got)
	}
	if got := LegacyRecords(records); got != nil {
		t.Errorf("records kept with nothing waiting: %+v, want none", got)
	}
}
