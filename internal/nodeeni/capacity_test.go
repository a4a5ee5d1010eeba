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
	h.start(h.options())

	spec := h.spec(map[string]string{"pool": "cap"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("cap", spec)
	far := h.spec(map[string]string{"pool": "far"})
	far.SubnetName = "multus-a"
	far.SecurityGroupNames = []string{"multus"}
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
	if c.Reason != nodeeni.ReasonDeviceIndexBeyondLimit {
		t.Errorf("reason %s", c.Reason)
	}

	// The node that has room got its ENI.
	h.eventually("fine attached", waitFor, func() (bool, string) {
		ne := h.get("cap")
		return ne.Status.ReadyNodes == 1 && ne.Status.DesiredNodes == 3 && len(ne.Status.Attachments) == 1 &&
			ne.Status.Attachments[0].NodeID == "fine", fmt.Sprintf("%+v", ne.Status)
	})
	ready := condition(h.get("cap"), v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ConditionDegraded {
		t.Errorf("Ready %+v", ready)
	}

	// Several resyncs later: not one more create, attach or delete.
	creates, attaches := h.calls("CreateNetworkInterface"), h.calls("AttachNetworkInterface")
	refreshes := h.calls("DescribeNetworkInterfaces")
	time.Sleep(6 * resync)
	if n := h.calls("DescribeNetworkInterfaces") - refreshes; n < 4 {
		t.Fatalf("only %d inventory refreshes in %v", n, 6*resync)
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
	h.start(h.options())
	spec := h.spec(map[string]string{"ng": "deny"})
	spec.SubnetName = "multus-a"
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("deny", spec)
	h.eventually("degraded", waitFor, func() (bool, string) {
		c := condition(h.get("deny"), v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == nodeeni.ReasonEC2Error &&
			strings.Contains(c.Message, "IAM policy"), fmt.Sprintf("%+v", c)
	})
	before := h.calls("ModifyNetworkInterfaceAttribute")
	time.Sleep(6 * resync)
	if n := h.calls("ModifyNetworkInterfaceAttribute") - before; n > 8 {
		t.Fatalf("%d refused calls in 6 resync intervals: a retry loop", n)
	}
	if h.calls("CreateNetworkInterface") != 1 || h.calls("DeleteNetworkInterface") != 0 {
		t.Fatalf("creates %d deletes %d", h.calls("CreateNetworkInterface"), h.calls("DeleteNetworkInterface"))
	}
}
