package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/readiness"
)

// The operator's nodes policy, from the chart and from config/rbac: its
// ServiceAccount, which RBAC lets patch any node, may only remove the
// readiness taint.
func TestOperatorNodesPolicy(t *testing.T) {
	c := newChart(t)
	t.Run("chart", func(t *testing.T) {
		install(t, c.renderRelease(t, "nop"), operatorPolicyKinds...)
		checkNodesPolicy(t, namespace, "nop-eni-operator", "nop-node")
	})
	t.Run("config-rbac", func(t *testing.T) {
		install(t, kustomize(t, "rbac"), operatorPolicyKinds...)
		checkNodesPolicy(t, "eni-operator", "eni-operator", "cfg-node")
	})
	t.Run("in-step", func(t *testing.T) { policyInStep(t, c, "eni-operator-nodes") })
}

func checkNodesPolicy(t *testing.T, ns, saName, nodeName string) {
	ctx := context.Background()
	admin := adminClient(t)
	op := serviceAccount(t, ns, saName, nil)
	ours := corev1.Taint{Key: readiness.TaintKey, Effect: corev1.TaintEffectNoSchedule}
	theirs := corev1.Taint{Key: "someone.else/taint", Effect: corev1.TaintEffectNoSchedule}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"a": "b"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{ours, theirs}}}
	if err := admin.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, node) })
	patch := func(what string, change func(n *corev1.Node)) error {
		n := &corev1.Node{}
		if err := op.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		old := n.DeepCopy()
		change(n)
		return op.Patch(ctx, n, client.MergeFrom(old))
	}
	// The policy reaches the admission plugin through an informer: wait
	// until it refuses. Each probe sets a new value: a patch that changes
	// nothing is no change for the policy to refuse.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := patch("probe", func(n *corev1.Node) { n.Labels["probe"] = time.Now().Format("150405.000000") })
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatalf("the nodes policy never refused the operator labelling a node: %v", err)
	}
	refusedByPolicy(t, "removing someone else's taint", patch("", func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == theirs.Key })
	}))
	refusedByPolicy(t, "cordoning the node", patch("", func(n *corev1.Node) { n.Spec.Unschedulable = true }))
	refusedByPolicy(t, "annotating the node", patch("", func(n *corev1.Node) { n.Annotations = map[string]string{"x": "y"} }))
	refusedByPolicy(t, "removing ours and adding another taint", patch("", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{theirs, {Key: "new/taint", Effect: corev1.TaintEffectNoExecute}}
	}))
	if err := patch("", func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == ours.Key })
	}); err != nil {
		t.Fatalf("removing the readiness taint: %v", err)
	}
	refusedByPolicy(t, "adding the readiness taint", patch("", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, ours) }))
}
