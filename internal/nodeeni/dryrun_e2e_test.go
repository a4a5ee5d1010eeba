package nodeeni_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// mutations are the EC2 actions that change something.
var mutations = []string{"CreateNetworkInterface", "AttachNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface",
	"ModifyNetworkInterfaceAttribute", "CreateTags", "DeleteTags"}

// Issue 13 (--dry-run): with DryRun, a NodeENI over two nodes, a spec
// change, then its deletion, and a leaked ENI for the collector, make no
// EC2 change at all; status, events and the cleanup metric say what would
// be done, and the deleted NodeENI keeps its finalizer.
func TestDryRunChangesNothing(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{
		{Name: "i0", Type: "m5.xlarge", Subnet: "nodes-a"}, {Name: "i1", Type: "m5.xlarge", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "dry"})
	h.addNode("n1", h.instance(1), "us-east-1a", map[string]string{"ng": "dry"})
	o := h.options()
	o.DryRun = true
	o.CollectorGracePeriod = 100 * time.Millisecond
	m := h.start(o)

	progressing := func(what string, check func(c *metav1.Condition) bool) *v1alpha1.NodeENI {
		t.Helper()
		var ne *v1alpha1.NodeENI
		h.eventually(what, waitFor, func() (bool, string) {
			ne = h.get("dry")
			if ne == nil {
				return false, "missing"
			}
			c := condition(ne, v1alpha1.ConditionProgressing)
			return c != nil && c.ObservedGeneration == ne.Generation && check(c), fmt.Sprintf("%+v", ne.Status.Conditions)
		})
		return ne
	}
	dryRun := func(substr ...string) func(c *metav1.Condition) bool {
		return func(c *metav1.Condition) bool {
			if c.Status != metav1.ConditionTrue || c.Reason != eniplan.ReasonDryRun || len(c.Message) > 1024 {
				return false
			}
			for _, s := range substr {
				if !strings.Contains(c.Message, s) {
					return false
				}
			}
			return true
		}
	}

	// 1. A new NodeENI: would create an ENI on each node.
	spec := h.multusSpec(map[string]string{"ng": "dry"})
	h.createNodeENI("dry", spec)
	progressing("would create 2 ENIs", dryRun("would create 2 ENIs", "node n0", "node n1"))
	h.eventually("DryRun event", waitFor, func() (bool, string) {
		notes := h.events("dry")[eniplan.ReasonDryRun]
		return len(notes) > 0 && strings.Contains(notes[0], "would create 2 ENIs"), fmt.Sprint(notes)
	})

	// 2. ENIs as an earlier run without --dry-run left them, plus a leaked
	// one of a NodeENI that no longer exists.
	uid := string(h.get("dry").UID)
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tags := func(node, instance, uid, name string) map[string]string {
		return map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: name, eniplan.TagNodeENIUID: uid,
			eniplan.TagNode: node, eniplan.TagInstance: instance, eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
			eniplan.TagCreatedAt: old, eniplan.TagNoManage: "true"}
	}
	_, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Instance: "i0", DeviceIndex: 1, DeleteOnTermination: true,
			Tags: tags("n0", h.instance(0), uid, "dry")}),
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Instance: "i1", DeviceIndex: 1, DeleteOnTermination: true,
			Tags: tags("n1", h.instance(1), uid, "dry")}),
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", Tags: tags("n9", h.instance(0), "6f0c1d2e-dead-4bee-8000-000000000000", "gone")}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.ready("dry", 2) // the seeded ENIs are adopted: nothing to do
	h.eventually("collector would delete the leaked ENI", waitFor, func() (bool, string) {
		n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_cleanups_total", map[string]string{"reason": eniplan.CleanupOrphan, "outcome": "dry-run"})
		return n == 1, fmt.Sprint(n)
	})

	// 3. A spec change: would create the replacements first.
	h.update("dry", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 2 })
	progressing("spec change: would create 2 ENIs at index 2", dryRun("would create 2 ENIs", "device index 2"))

	// 4. Deletion: the ENIs stay, so does the finalizer; the status says so.
	if err := h.k8s.Delete(context.Background(), h.get("dry")); err != nil {
		t.Fatal(err)
	}
	progressing("deletion: would detach 2 ENIs, keeps the finalizer", dryRun("keeps its finalizer", "would detach 2 ENIs", eniplan.CleanupNodeENIDeleted))
	time.Sleep(6 * resync)
	ne := h.get("dry")
	if ne == nil || len(ne.Finalizers) == 0 {
		t.Fatalf("the NodeENI deleted in dry-run lost its finalizer: %+v", ne)
	}

	for _, a := range mutations {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls in dry-run", n, a)
		}
	}
	if got := len(h.enis()); got != 3 {
		t.Errorf("%d ENIs left, want the 3 seeded", got)
	}
	if n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_cleanups_total", map[string]string{"outcome": "deleted"}); n != 0 {
		t.Errorf("cleanups counted as deleted in dry-run: %v", n)
	}
}
