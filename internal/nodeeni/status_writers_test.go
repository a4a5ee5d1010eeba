package nodeeni_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// A condition another controller writes on a NodeENI (podaddrs,
// attachdefs) survives the NodeENI controller's status writes, also when
// it lands between the controller's read and its write.
func TestOtherWritersConditionsKept(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.xlarge", Subnet: "nodes-a"}, {Type: "m5.xlarge", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "w"})
	h.start(h.options())
	h.createNodeENI("w", h.multusSpec(map[string]string{"ng": "w"}))
	h.ready("w", 1)

	ctx := context.Background()
	ne := h.get("w")
	old := ne.DeepCopy()
	meta.SetStatusCondition(&ne.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionPodAddressesRegistered, Status: metav1.ConditionTrue,
		Reason: "Registered", Message: "Multus pod addresses registered: 0, on the ENIs of 0 nodes"})
	if err := h.k8s.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}
	// A second node: the controller writes counts and conditions again.
	h.addNode("n1", h.instance(1), "us-east-1a", map[string]string{"ng": "w"})
	got := h.ready("w", 2)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPodAddressesRegistered); c == nil || c.Reason != "Registered" {
		t.Fatalf("the other writer's condition was dropped: %+v", got.Status.Conditions)
	}
}
