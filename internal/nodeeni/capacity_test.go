package nodeeni_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Item 3: a full instance, a device index someone else holds and an index
// beyond the instance type give a Degraded condition naming the node and
// the reason, and no create/attach/delete loop.
func TestCapacityIsDegradedNotChurn(t *testing.T) {
	h := newHarness(t, emulator.World{
		Instances: []emulator.InstanceSpec{
			{Name: "full", Type: "t3.small", Subnet: "nodes-a"},   // 3 interfaces
			{Name: "taken", Type: "m5.xlarge", Subnet: "nodes-a"}, // index 1 held by another ENI
			{Name: "fine", Type: "m5.xlarge", Subnet: "nodes-a"},
			{Name: "small", Type: "t3.small", Subnet: "nodes-a"}, // indexes 0-2 only
		},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{
			{Subnet: "nodes-a", Instance: "full", DeviceIndex: 1},
			{Subnet: "nodes-a", Instance: "full", DeviceIndex: 2},
			{Subnet: "nodes-a", Instance: "taken", DeviceIndex: 1},
		},
	})
	h.addNode("full", h.instance(0), "us-east-1a", map[string]string{"pool": "cap"})
	h.addNode("taken", h.instance(1), "us-east-1a", map[string]string{"pool": "cap"})
	h.addNode("fine", h.instance(2), "us-east-1a", map[string]string{"pool": "cap"})
	h.addNode("small", h.instance(3), "us-east-1a", map[string]string{"pool": "far"})
	h.startStepped(h.options())

	spec := h.multusSpec(map[string]string{"pool": "cap"})
	h.createNodeENI("cap", spec)
	far := h.multusSpec(map[string]string{"pool": "far"})
	far.DeviceIndex = 3
	h.createNodeENI("far", far)

	degraded := func(name string, wants ...string) *metav1.Condition {
		var c *metav1.Condition
		h.eventually(name+" degraded", waitFor, func() (bool, string) {
			ne := h.get(name)
			c = condition(ne, v1alpha1.ConditionDegraded)
			if c == nil || c.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("%+v", ne.Status)
			}
			for _, w := range wants {
				if !strings.Contains(c.Message, w) {
					return false, c.Message
				}
			}
			return true, ""
		})
		return c
	}
	c := degraded("cap", "node full: ENILimitReached", "all 3 network interfaces in use", "node taken: DeviceIndexInUse", "device index 1")
	t.Logf("Degraded: %s: %s", c.Reason, c.Message)
	c = degraded("far", "node small: DeviceIndexBeyondLimit", "device index 3 is beyond instance type t3.small")
	t.Logf("Degraded: %s: %s", c.Reason, c.Message)
	if c.Reason != eniplan.ReasonDeviceIndexBeyondLimit {
		t.Errorf("reason %s", c.Reason)
	}

	// The node that has room got its ENI.
	h.eventually("fine attached", waitFor, func() (bool, string) {
		ne := h.get("cap")
		return ne.Status.ReadyNodes == 1 && ne.Status.DesiredNodes == 3 && len(h.attachments(ne.Name)) == 1 &&
			h.attachments(ne.Name)[0].NodeID == "fine", fmt.Sprintf("%+v", ne.Status)
	})
	ready := condition(h.get("cap"), v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ConditionDegraded {
		t.Errorf("Ready %+v", ready)
	}

	// Several resyncs later: not one more create, attach or delete.
	creates, attaches := h.calls("CreateNetworkInterface"), h.calls("AttachNetworkInterface")
	refreshes := h.calls("DescribeNetworkInterfaces")
	h.steps(6)
	if n := h.calls("DescribeNetworkInterfaces") - refreshes; n < 6 {
		t.Fatalf("only %d inventory refreshes in 6 steps of the clock", n)
	}
	if h.calls("CreateNetworkInterface") != creates || h.calls("AttachNetworkInterface") != attaches || h.calls("DeleteNetworkInterface") != 0 {
		t.Fatalf("churn: creates %d->%d, attaches %d->%d, deletes %d", creates, h.calls("CreateNetworkInterface"),
			attaches, h.calls("AttachNetworkInterface"), h.calls("DeleteNetworkInterface"))
	}
	if creates != 1 || attaches != 1 {
		t.Fatalf("%d creates and %d attaches for one node with room, want 1 each", creates, attaches)
	}
	if n := len(h.enis()); n != 1 {
		t.Fatalf("%d ENIs, want 1", n)
	}
}

// A step EC2 refuses (here: a missing IAM permission) is reported with
// what to do and tried again once per resync, not in a loop.
func TestRefusedStepIsNotALoop(t *testing.T) {
	h := newHarness(t, threeNodes())
	if err := h.Emulator.Configure(emulator.Config{Denied: []string{"ModifyNetworkInterfaceAttribute"}}); err != nil {
		t.Fatal(err)
	}
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "deny"})
	h.startStepped(h.options())
	spec := h.multusSpec(map[string]string{"ng": "deny"})
	h.createNodeENI("deny", spec)
	h.eventually("degraded", waitFor, func() (bool, string) {
		c := condition(h.get("deny"), v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == eniplan.ReasonEC2Error &&
			strings.Contains(c.Message, "IAM policy"), fmt.Sprintf("%+v", c)
	})
	before := h.calls("ModifyNetworkInterfaceAttribute")
	h.steps(6)
	if n := h.calls("ModifyNetworkInterfaceAttribute") - before; n > 8 {
		t.Fatalf("%d refused calls in 6 inventory refreshes: a retry loop", n)
	}
	if h.calls("CreateNetworkInterface") != 1 || h.calls("DeleteNetworkInterface") != 0 {
		t.Fatalf("creates %d deletes %d", h.calls("CreateNetworkInterface"), h.calls("DeleteNetworkInterface"))
	}
}

// Issue 13 (make before break): a deviceIndex change an m5.large cannot
// take (indexes 0-2) keeps the node's working ENI and reports the node
// Degraded DeviceIndexBeyondLimit; nothing is detached or deleted.
func TestUnsatisfiableSpecChangeKeepsTheENI(t *testing.T) {
	h := newIndexTwoHarness(t, "keep", 1)
	before := h.enis()
	if len(before) != 1 || before[0].Attachment == nil || before[0].Attachment.DeviceIndex != 2 {
		t.Fatalf("ENIs before the change: %+v", before)
	}
	h.Emulator.ResetCounts()

	h.update("keep", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 3 })
	h.eventually("node reported Degraded DeviceIndexBeyondLimit", waitFor, func() (bool, string) {
		ne := h.get("keep")
		c := condition(ne, v1alpha1.ConditionDegraded)
		ok := ne.Status.ObservedGeneration == ne.Generation && c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == eniplan.ReasonDeviceIndexBeyondLimit && strings.Contains(c.Message, "n0")
		return ok, fmt.Sprintf("%+v", ne.Status)
	})
	h.steps(6) // several refreshes: still nothing removed
	for _, a := range []string{"DetachNetworkInterface", "DeleteNetworkInterface", "CreateNetworkInterface", "AttachNetworkInterface"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls after an unsatisfiable spec change", n, a)
		}
	}
	after := h.enis()
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].Attachment == nil || after[0].Attachment.DeviceIndex != 2 {
		t.Fatalf("the working ENI was not kept: %+v", after)
	}
	ne := h.get("keep")
	if len(h.attachments(ne.Name)) != 1 || h.attachments(ne.Name)[0].Status != v1alpha1.AttachmentAttached ||
		h.attachments(ne.Name)[0].ENIID != before[0].ID {
		t.Fatalf("status attachments %+v", h.attachments(ne.Name))
	}
	if c := condition(ne, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Ready %+v", c)
	}

	// Back to a satisfiable index: the node is healthy again, same ENI.
	h.update("keep", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 2 })
	h.ready("keep", 1)
	if got := h.enis(); len(got) != 1 || got[0].ID != before[0].ID || h.calls("DetachNetworkInterface") != 0 {
		t.Fatalf("after reverting: %+v, %d detaches", got, h.calls("DetachNetworkInterface"))
	}
}

// Issue 13 (make before break): a satisfiable deviceIndex change (2 -> 1
// on an m5.large whose index 1 is free) ends with the new ENI attached
// and the old one deleted, and the new one was attached before the old
// one was detached: the node always had an ENI of the NodeENI.
func TestSpecChangeAttachesBeforeDetaching(t *testing.T) {
	h := newIndexTwoHarness(t, "move", 2)
	old := ids(h)
	oldInstance := map[string]string{} // attachment -> instance
	for _, e := range h.enis() {
		oldInstance[e.Attachment.ID] = e.Attachment.InstanceID
	}
	h.Emulator.ResetCounts()

	h.update("move", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 1 })
	h.waitReplaced(2, 1, old)
	h.ready("move", 2)

	// The emulator's call log: on each instance, the new ENI's attach
	// precedes the old one's detach.
	attachAt := map[string]int{} // instance -> position of the first successful attach
	detachAt := map[string]int{} // instance -> position of the first detach
	for i, c := range h.Emulator.Calls() {
		switch c.Action {
		case "AttachNetworkInterface":
			if inst := c.Params["InstanceId"][0]; c.Code == "" {
				if _, seen := attachAt[inst]; !seen {
					attachAt[inst] = i
				}
			}
		case "DetachNetworkInterface":
			inst, ok := oldInstance[c.Params["AttachmentId"][0]]
			if !ok {
				t.Fatalf("detach of %v: not an old attachment", c.Params["AttachmentId"])
			}
			if _, seen := detachAt[inst]; !seen {
				detachAt[inst] = i
			}
		}
	}
	for _, inst := range []string{h.instance(0), h.instance(1)} {
		a, okA := attachAt[inst]
		d, okD := detachAt[inst]
		if !okA || !okD || a > d {
			t.Errorf("instance %s: first attach at call %d (%v), first detach at call %d (%v): the new ENI must be attached before the old one is detached",
				inst, a, okA, d, okD)
		}
	}
	if n := h.calls("DeleteNetworkInterface"); n != 2 {
		t.Errorf("%d deletes, want 2 (the old ENIs)", n)
	}
}

// newIndexTwoHarness starts the controller over n m5.large nodes (device
// indexes 0-2) labelled ng=mbb and waits until the NodeENI name, on
// multus-a at device index 2, is ready on every node: where the
// make-before-break tests change the index from.
func newIndexTwoHarness(t *testing.T, name string, n int) *harness {
	t.Helper()
	var instances []emulator.InstanceSpec
	for i := range n {
		instances = append(instances, emulator.InstanceSpec{Name: fmt.Sprintf("i%d", i), Type: "m5.large", Subnet: "nodes-a"})
	}
	h := newHarness(t, emulator.World{Instances: instances})
	for i := range n {
		h.addNode(fmt.Sprintf("n%d", i), h.instance(i), "us-east-1a", map[string]string{"ng": "mbb"})
	}
	h.startStepped(h.options())
	spec := h.multusSpec(map[string]string{"ng": "mbb"})
	spec.DeviceIndex = 2
	h.createNodeENI(name, spec)
	h.ready(name, n)
	return h
}
