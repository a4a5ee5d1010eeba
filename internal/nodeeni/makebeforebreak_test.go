package nodeeni_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
)

// Issue 13 (make before break): a deviceIndex change an m5.large cannot
// take (indexes 0-2) keeps the node's working ENI and reports the node
// Degraded DeviceIndexBeyondLimit; nothing is detached or deleted.
func TestUnsatisfiableSpecChangeKeepsTheENI(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Name: "i0", Type: "m5.large", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "mbb"})
	h.start(h.options())
	spec := h.spec(map[string]string{"ng": "mbb"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupNames = []string{"multus"}
	spec.DeviceIndex = 2
	h.createNodeENI("keep", spec)
	h.ready("keep", 1)
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
			c.Reason == nodeeni.ReasonDeviceIndexBeyondLimit && strings.Contains(c.Message, "n0")
		return ok, fmt.Sprintf("%+v", ne.Status)
	})
	time.Sleep(6 * resync) // several resyncs: still nothing removed
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
	if len(ne.Status.Attachments) != 1 || ne.Status.Attachments[0].Status != v1alpha1.AttachmentAttached ||
		ne.Status.Attachments[0].ENIID != before[0].ID {
		t.Fatalf("status attachments %+v", ne.Status.Attachments)
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
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{
		{Name: "i0", Type: "m5.large", Subnet: "nodes-a"}, {Name: "i1", Type: "m5.large", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "mbb"})
	h.addNode("n1", h.instance(1), "us-east-1a", map[string]string{"ng": "mbb"})
	h.start(h.options())
	spec := h.spec(map[string]string{"ng": "mbb"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupNames = []string{"multus"}
	spec.DeviceIndex = 2
	h.createNodeENI("move", spec)
	h.ready("move", 2)
	old := map[string]string{}         // ENI -> its attachment
	oldInstance := map[string]string{} // attachment -> instance
	for _, e := range h.enis() {
		old[e.ID] = e.Attachment.ID
		oldInstance[e.Attachment.ID] = e.Attachment.InstanceID
	}
	h.Emulator.ResetCounts()

	h.update("move", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 1 })
	h.eventually("ENIs replaced at index 1, old ones deleted", waitFor, func() (bool, string) {
		list := h.enis()
		if len(list) != 2 {
			return false, fmt.Sprintf("%d ENIs", len(list))
		}
		for _, e := range list {
			if _, was := old[e.ID]; was || e.Attachment == nil || e.Attachment.DeviceIndex != 1 || e.Attachment.Status != "attached" {
				return false, fmt.Sprintf("%s attachment %+v", e.ID, e.Attachment)
			}
		}
		return true, ""
	})
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
