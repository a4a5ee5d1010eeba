package nodeeni_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// original is one ENI as aws-multi-eni-controller leaves it, for seeding.
type original struct {
	subnet, node, instance string // instance "" leaves it detached
	index                  int
	record                 bool   // in the NodeENI's status
	recordInstance         string // the instance the status entry names ("" = instance)
	recordNode             string // the node the status entry names ("" = node)
	description            string // "" = the original's default
}

// seedOriginal seeds the world and a NodeENI exactly as
// aws-multi-eni-controller leaves them (testenv.MultiENI*): its ENIs with
// its tags and default description, attached with DeleteOnTermination;
// the NodeENI with its finalizer and its status.attachments format. It
// returns the ENI IDs in the order given.
func (h *harness) seedOriginal(name string, spec v1alpha1.NodeENISpec, enis []original) []string {
	h.t.Helper()
	var specs []emulator.NetworkInterfaceSpec
	for _, o := range enis {
		group := h.Groups["multus"]
		if o.subnet == "elsewhere" {
			group = ""
		}
		s := testenv.MultiENIInterface(testenv.MultiENI{NodeENI: name, Node: o.node, Subnet: o.subnet, SubnetID: h.Subnets[o.subnet],
			Group: group, Instance: o.instance, Index: o.index})
		if o.description != "" {
			s.Description = o.description
		}
		specs = append(specs, s)
	}
	res := h.Load(h.t, emulator.World{NetworkInterfaces: specs})
	ids := make([]string, len(enis))
	var records []testenv.MultiENIAttachment
	for i, o := range enis {
		ids[i] = res.NetworkInterfaces[i].ID
		if !o.record {
			continue
		}
		r := testenv.MultiENIAttachment{Node: o.node, Instance: o.instance, ENI: ids[i], Subnet: h.Subnets[o.subnet],
			SubnetCIDR: "10.0.32.0/20", DeviceIndex: o.index}
		if o.instance != "" {
			r.AttachmentID = h.ENI(h.t, ids[i]).Attachment.ID
		}
		if o.recordInstance != "" {
			r.Instance = o.recordInstance
		}
		if o.recordNode != "" {
			r.Node = o.recordNode
		}
		records = append(records, r)
	}
	testenv.CreateMultiENINodeENI(h.t, h.k8s, name, spec, records)
	return ids
}

// oneOriginal is a harness with one node n0 and a NodeENI name of
// aws-multi-eni-controller for it, with its one ENI (multus-a, index 1,
// recorded in the status), as seedOriginal leaves them; it returns the
// ENI's ID.
func oneOriginal(t *testing.T, name string) (*harness, string) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Name: "i0", Type: "m5.xlarge", Subnet: "nodes-a"}}})
	sel := map[string]string{"ng": name}
	h.addNode("n0", h.instance(0), "us-east-1a", sel)
	spec := h.spec(sel)
	spec.SubnetIDs = []string{h.Subnets["multus-a"]}
	spec.SecurityGroupIDs = []string{h.Groups["multus"]}
	ids := h.seedOriginal(name, spec, []original{{subnet: "multus-a", node: "n0", instance: h.instance(0), index: 1, record: true}})
	return h, ids[0]
}

// touched returns the ENIs each EC2 call that changes something named
// (by its NetworkInterfaceId or ResourceId parameters), by action.
func (h *harness) touched() map[string][]string {
	out := map[string][]string{}
	for _, c := range h.Emulator.Calls() {
		if strings.HasPrefix(c.Action, "Describe") {
			continue
		}
		for k, vs := range c.Params {
			if strings.HasPrefix(k, "NetworkInterfaceId") || strings.HasPrefix(k, "ResourceId") {
				out[c.Action] = append(out[c.Action], vs...)
			}
		}
	}
	return out
}

// originalListings counts the DescribeNetworkInterfaces calls that look
// for aws-multi-eni-controller's ENIs (filtered by its managed-by tag).
func (h *harness) originalListings() int {
	n := 0
	for _, c := range h.Emulator.Calls() {
		if c.Action != "DescribeNetworkInterfaces" {
			continue
		}
		for k, vs := range c.Params {
			if strings.HasPrefix(k, "Filter.") && strings.HasSuffix(k, ".Name") && slices.Contains(vs, "tag:"+eniplan.OriginalTagManagedBy) {
				n++
			}
		}
	}
	return n
}

// Issue 15: NodeENIs and ENIs exactly as aws-multi-eni-controller leaves
// them are taken over in place when the operator starts: the ENIs the
// spec wants are adopted (one CreateTags each, no create, attach, detach,
// delete or modify: their attachment, device index and DeleteOnTermination
// stay), the status is rewritten in this CRD's shape and the NodeENI is
// Ready; an ENI of the original the spec no longer wants is removed as
// usual; ENIs that only claim to be the original's — attached to an
// instance that is not their node's, in another VPC, detached, tagged
// like the original's on the node but with someone else's description
// and no status entry — are not adopted, are reported, and are never
// touched. A restart afterwards does nothing more.
func TestAdoptOriginalENIs(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{
		{Name: "i0", Type: "m5.xlarge", Subnet: "nodes-a"}, {Name: "i1", Type: "m5.xlarge", Subnet: "nodes-a"},
		{Name: "stranger", Type: "m5.xlarge", Subnet: "nodes-a"}}})
	sel := map[string]string{"ng": "adopt-legacy"}
	h.addNode("n0", h.instance(0), "us-east-1a", sel)
	h.addNode("n1", h.instance(1), "us-east-1a", sel)
	spec := h.spec(sel)
	spec.SubnetIDs = []string{h.Subnets["multus-a"]}
	spec.SecurityGroupIDs = []string{h.Groups["multus"]}
	ids := h.seedOriginal("adopt-legacy", spec, []original{
		{subnet: "multus-a", node: "n0", instance: h.instance(0), index: 1, record: true}, // 0: wanted, adopted
		{subnet: "multus-a", node: "n1", instance: h.instance(1), index: 1, record: true}, // 1: wanted, adopted
		// 2: its subnet left the spec: adopted, then detached and deleted.
		{subnet: "storage-a", node: "n0", instance: h.instance(0), index: 2, record: true},
		// 3: claims node n1 but is attached to an instance that is no
		// node's; the status entry agrees with the attachment (as a forged
		// one would): not adopted.
		{subnet: "multus-a", node: "n1", instance: h.instance(2), index: 1, record: true},
		// 4: in another VPC, named in status: not adopted.
		{subnet: "elsewhere", node: "n0", record: true},
		// 5: tags only, detached: not adopted.
		{subnet: "multus-a", node: "n0"},
		// 6: someone's ENI on node n0 with the original's tags copied onto
		// it, not in status: its description gives it away.
		{subnet: "multus-a", node: "n0", instance: h.instance(0), index: 3, description: "db failover"},
	})
	adopted, removed, foreign := ids[:2], ids[2], ids[3:]
	h.Emulator.ResetCounts()

	// The original's ENIs are listed at most once per resync interval
	// while a NodeENI, as read, still needs them; the tests' 300 ms is
	// shorter than the informer's lag on a loaded machine can be, which
	// would show its stale copy of the status to a second pass. At the
	// default minute, that lag never matters.
	o := h.options()
	o.ResyncInterval = 3 * time.Second
	m := h.start(o)
	ne := h.ready("adopt-legacy", 2)
	h.eventually("the unwanted original ENI deleted", waitFor, func() (bool, string) {
		return h.calls("DeleteNetworkInterface") == 1, fmt.Sprintf("touched %v", h.touched())
	})
	h.eventually("ENIs not adopted reported", waitFor, func() (bool, string) {
		notes := strings.Join(h.events("adopt-legacy")["NotAdopted"], "\n")
		ok := true
		for _, id := range foreign {
			ok = ok && strings.Contains(notes, id)
		}
		return ok && strings.Contains(notes, eniplan.NotAdoptedAttachedElsewhere) && strings.Contains(notes, eniplan.NotAdoptedNotFound) &&
			strings.Contains(notes, eniplan.NotAdoptedNotAttached) && strings.Contains(notes, eniplan.NotAdoptedNoSecondEvidence), notes
	})
	time.Sleep(4 * resync)

	// Exactly: one CreateTags per adopted ENI (the two kept and the one
	// removed), the removal's detach and delete, nothing else that changes
	// anything.
	touched := h.touched()
	slices.Sort(touched["CreateTags"])
	wantTagged := append(append([]string(nil), adopted...), removed)
	slices.Sort(wantTagged)
	if !slices.Equal(touched["CreateTags"], wantTagged) || h.calls("CreateTags") != 3 {
		t.Errorf("CreateTags: %d calls on %v, want 3 on %v", h.calls("CreateTags"), touched["CreateTags"], wantTagged)
	}
	for action, want := range map[string]int{"CreateNetworkInterface": 0, "AttachNetworkInterface": 0, "ModifyNetworkInterfaceAttribute": 0,
		"DetachNetworkInterface": 1, "DeleteNetworkInterface": 1, "DeleteTags": 0} {
		if got := h.calls(action); got != want {
			t.Errorf("%s: %d calls, want %d (touched %v)", action, got, want, touched[action])
		}
	}
	for action, list := range touched {
		for _, id := range list {
			if action != "CreateTags" && id != removed {
				t.Errorf("%s on %s", action, id)
			}
			if slices.Contains(foreign, id) {
				t.Errorf("%s on %s, an ENI that is not the original's to adopt", action, id)
			}
		}
	}
	// One listing serves every NodeENI; the status written, none follows.
	if n := h.originalListings(); n != 1 {
		t.Errorf("%d listings of the original's ENIs, want 1", n)
	}

	// The adopted ENIs are the operator's now, where they were.
	ours := map[string]awstypes.ENI{}
	for _, e := range h.enis() {
		ours[e.ID] = e
	}
	if len(ours) != 2 {
		t.Errorf("the cluster's ENIs are %v, want the two adopted", keys(ours))
	}
	for i, id := range adopted {
		e, ok := ours[id]
		switch {
		case !ok:
			t.Errorf("%s not tagged as the operator's", id)
		case e.Attachment == nil || e.Attachment.InstanceID != h.instance(i) || e.Attachment.DeviceIndex != 1 || !e.Attachment.DeleteOnTermination:
			t.Errorf("%s attachment %+v", id, e.Attachment)
		case e.Tags[eniplan.TagNodeENIUID] != string(ne.UID) || e.Tags[eniplan.TagDeviceIndex] != "1" || e.Tags[eniplan.OriginalTagNodeENI] != "adopt-legacy":
			t.Errorf("%s tags %v", id, e.Tags)
		}
	}

	// The ENINodes list the adopted ENIs only, their attachment IDs the
	// original's; the original's status.attachments stays as it wrote it
	// until each node's agent reports in its ENINode.
	entries := h.attachments(ne.Name)
	legacy := ne.Status.Attachments
	if len(entries) != 2 || len(legacy) != 2 {
		t.Fatalf("entries %+v, status attachments %+v", entries, legacy)
	}
	for _, a := range entries {
		e := ours[a.ENIID]
		if !slices.Contains(adopted, a.ENIID) || a.Status != v1alpha1.AttachmentAttached || a.MACAddress == "" || a.PrivateIP == "" ||
			e.Attachment == nil || a.AttachmentID != e.Attachment.ID || a.DeviceIndex != 1 || !a.DeleteOnTermination || a.SubnetCIDR == "" {
			t.Errorf("status entry %+v", a)
		}
	}
	if notes := h.events("adopt-legacy")["Adopted"]; len(notes) == 0 {
		t.Error("no Adopted event")
	}

	// A restart finds nothing to do: no listing of the original's ENIs,
	// no write to EC2 or to the status.
	_ = m.Stop()
	h.Emulator.ResetCounts()
	h.start(o)
	time.Sleep(6 * resync)
	after := h.ready("adopt-legacy", 2)
	total, by := h.totalCalls()
	for a := range by {
		if a != "DescribeNetworkInterfaces" && a != "DescribeSubnets" && a != "DescribeSecurityGroups" {
			t.Errorf("after the restart: %d %s calls (all: %d, %v)", by[a], a, total, by)
		}
	}
	if n := h.originalListings(); n != 0 {
		t.Errorf("after the restart: %d listings of the original's ENIs, want 0", n)
	}
	if later := h.attachments(ne.Name); !equalAttachments(entries, later) || !equalAttachments(legacy, after.Status.Attachments) {
		t.Errorf("entries rewritten after the restart:\n%+v\n%+v\nstatus %+v", entries, later, after.Status.Attachments)
	}

	// Once a node's agent reports in its ENINode, its node's entries leave
	// status.attachments; the other node's stay until its agent does.
	first := entries[0]
	h.report(first.NodeID, v1alpha1.InterfaceStatus{ENIID: first.ENIID, State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()})
	h.eventually("the reporting node's entry dropped", waitFor, func() (bool, string) {
		st := h.get(ne.Name).Status.Attachments
		return len(st) == 1 && st[0].NodeID != first.NodeID, fmt.Sprintf("status attachments %+v", st)
	})
	second := entries[1]
	h.report(second.NodeID, v1alpha1.InterfaceStatus{ENIID: second.ENIID, State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()})
	h.eventually("status.attachments cleared", waitFor, func() (bool, string) {
		st := h.get(ne.Name).Status.Attachments
		return len(st) == 0, fmt.Sprintf("status attachments %+v", st)
	})
}

// A crash after the adoption's CreateTags and before the status write
// leaves the ENIs tagged and the status the original's: the restarted
// operator finds them its own and only rewrites the status.
func TestAdoptAfterCrashBeforeStatus(t *testing.T) {
	h, eni := oneOriginal(t, "adopt-crash")
	uid := string(h.get("adopt-crash").UID)
	// What the adoption's one CreateTags wrote before the crash.
	if err := h.ec2Client().CreateTags(context.Background(), eni, map[string]string{eniplan.TagCluster: h.cluster,
		eniplan.TagNodeENI: "adopt-crash", eniplan.TagNodeENIUID: uid, eniplan.TagNode: "n0", eniplan.TagInstance: h.instance(0),
		eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1", eniplan.TagCreatedAt: time.Now().UTC().Format(time.RFC3339),
		eniplan.TagNoManage: "true"}); err != nil {
		t.Fatal(err)
	}
	h.prove(eni)
	o := h.options()
	o.ResyncInterval = 3 * time.Second // see TestAdoptOriginalENIs
	h.start(o)
	ne := h.ready("adopt-crash", 1)
	time.Sleep(4 * resync)
	_, by := h.totalCalls()
	for a := range by {
		if a != "DescribeNetworkInterfaces" && a != "DescribeSubnets" && a != "DescribeSecurityGroups" {
			t.Errorf("%d %s calls (all %v)", by[a], a, by)
		}
	}
	if n := h.originalListings(); n != 1 {
		t.Errorf("%d listings of the original's ENIs, want 1 (the status was still the original's)", n)
	}
	if len(h.attachments(ne.Name)) != 1 || h.attachments(ne.Name)[0].ENIID != eni || h.attachments(ne.Name)[0].MACAddress == "" {
		t.Errorf("status %+v", h.attachments(ne.Name))
	}
}

func keys(m map[string]awstypes.ENI) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func equalAttachments(a, b []v1alpha1.ENIAttachment) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.ENIAttachment) bool {
		return x.ENIID == y.ENIID && x.AttachmentID == y.AttachmentID && x.LastUpdated.Equal(&y.LastUpdated) && x.Status == y.Status
	})
}

// Without the IAM statement of the migration, EC2 refuses the adoption's
// CreateTags: the node is reported (Degraded, EC2Error), nothing is
// created, attached or removed in its place, and the status keeps the
// original's entry (the evidence for the next try). Once allowed, the
// next pass adopts the ENI.
func TestAdoptionRefused(t *testing.T) {
	h, eni := oneOriginal(t, "adopt-refused")
	if err := h.Emulator.Configure(emulator.Config{Denied: []string{"CreateTags"}}); err != nil {
		t.Fatal(err)
	}
	h.Emulator.ResetCounts()
	h.start(h.options())
	h.eventually("refusal reported", waitFor, func() (bool, string) {
		ne := h.get("adopt-refused")
		c := condition(ne, v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == eniplan.ReasonEC2Error &&
			strings.Contains(c.Message, "UnauthorizedOperation"), fmt.Sprintf("%+v", ne.Status)
	})
	time.Sleep(4 * resync)
	ne := h.get("adopt-refused")
	// The original's entry is kept, as evidence in status and for the
	// node's agent in its ENINode.
	for _, as := range [][]v1alpha1.ENIAttachment{ne.Status.Attachments, h.attachments(ne.Name)} {
		if len(as) != 1 || as[0].ENIID != eni || as[0].NodeID != "n0" {
			t.Errorf("entries %+v, want the original's entry kept", as)
		}
	}
	for _, a := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls while the adoption is refused", n, a)
		}
	}
	if err := h.Emulator.Configure(emulator.Config{Denied: []string{}}); err != nil {
		t.Fatal(err)
	}
	ne = h.ready("adopt-refused", 1)
	if len(h.attachments(ne.Name)) != 1 || h.attachments(ne.Name)[0].ENIID != eni || h.attachments(ne.Name)[0].MACAddress == "" {
		t.Errorf("status %+v", h.attachments(ne.Name))
	}
	for _, a := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls", n, a)
		}
	}
}

// In dry-run the operator says it would adopt the original's ENIs, pass
// after pass (never that it would create their replacements), and
// changes nothing; without dry-run it then adopts them.
func TestAdoptDryRun(t *testing.T) {
	h, eni := oneOriginal(t, "adopt-dry")
	h.Emulator.ResetCounts()
	o := h.options()
	o.DryRun = true
	m := h.start(o)
	h.eventually("dry-run summary", waitFor, func() (bool, string) {
		c := condition(h.get("adopt-dry"), v1alpha1.ConditionProgressing)
		return c != nil && c.Reason == eniplan.ReasonDryRun && strings.Contains(c.Message, "would adopt 1 ENI") &&
			strings.Contains(c.Message, eni), fmt.Sprintf("%+v", c)
	})
	time.Sleep(6 * resync)
	c := condition(h.get("adopt-dry"), v1alpha1.ConditionProgressing)
	if c == nil || c.Reason != eniplan.ReasonDryRun || !strings.Contains(c.Message, "would adopt 1 ENI") || strings.Contains(c.Message, "create") {
		t.Errorf("Progressing after several passes: %+v", c)
	}
	_, by := h.totalCalls()
	for a := range by {
		if !strings.HasPrefix(a, "Describe") {
			t.Errorf("dry run: %d %s calls", by[a], a)
		}
	}
	_ = m.Stop()
	h.Emulator.ResetCounts()
	h.start(h.options())
	ne := h.ready("adopt-dry", 1)
	if len(h.attachments(ne.Name)) != 1 || h.attachments(ne.Name)[0].ENIID != eni {
		t.Errorf("status %+v", h.attachments(ne.Name))
	}
	if n := h.calls("CreateTags"); n != 1 {
		t.Errorf("%d CreateTags, want 1", n)
	}
	for _, a := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls", n, a)
		}
	}
}
