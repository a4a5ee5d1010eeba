package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// What the operator's admission policy is installed with: its
// ServiceAccount and RBAC, so the writes below are refused by the
// policy, not by RBAC.
var operatorPolicyKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// The operator's admission policy, from the chart and from config/rbac,
// installed with the operator's RBAC in a real API server: the
// operator's ServiceAccount makes the very writes the tagger and the
// NodeENI controller make (the same patch types, fields and field
// owner), and tagger.RemoveFinalizers (--remove-pod-finalizers) runs as
// it; a stolen token's writes that RBAC lets through are refused: a
// pod's image, labels, owner references, other annotations, other
// finalizers, other conditions or status fields; a NodeENI's spec,
// annotations or other finalizers. Other users are not restricted.
func TestOperatorAdmissionPolicy(t *testing.T) {
	c := newChart(t)
	t.Run("chart", func(t *testing.T) {
		objs := c.renderRelease(t, "opp")
		install(t, objs, operatorPolicyKinds...)
		checkOperatorPolicy(t, namespace, "opp-eni-operator", "opp-chart")
	})
	t.Run("config-rbac", func(t *testing.T) {
		objs := kustomize(t, "rbac")
		install(t, objs, operatorPolicyKinds...)
		checkOperatorPolicy(t, "eni-operator", "eni-operator", "opp-config")
	})
}

// refusedByPolicy checks that err is the admission policy's refusal.
func refusedByPolicy(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed; want refused by the admission policy", what)
		return
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v; want refused by the admission policy", what, err)
	}
	if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
		t.Errorf("%s: %v; want the admission policy's refusal", what, err)
	}
	t.Logf("%s: refused: %v", what, err)
}

// waitPolicyRefusesLabelChange creates a probe pod in ns and waits until
// op's change of its labels is refused by the admission policy: the
// policy reaches the admission plugin through an informer, RBAC through
// another, so a fresh install refuses nothing for a moment.
func waitPolicyRefusesLabelChange(t *testing.T, admin, op client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	probe := testPod(t, admin, ns, "probe", 1)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		p := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(probe), p); err != nil {
			return false, err
		}
		old := p.DeepCopy()
		p.Labels["probe"] = time.Now().Format("150405.000000")
		err := op.Patch(ctx, p, client.MergeFrom(old))
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatalf("the admission policy never refused the operator changing a pod's label: %v", err)
	}
}

const otherFinalizer = "example.com/keep"

// testPod is a pod as a user and the kubelet leave it: a container, a
// label, an annotation of the user's and of the tagger's namespace, a
// finalizer of someone else's, a Running status with the kubelet's
// conditions. containers > 1 makes it big (env, resources) for the CEL
// cost.
func testPod(t *testing.T, admin client.Client, ns, name string, containers int) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels:      map[string]string{"app": "web"},
		Annotations: map[string]string{"team": "a", tagger.DefaultAnnotationKey: "team=a"},
		Finalizers:  []string{otherFinalizer}}}
	for i := range containers {
		ctr := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "registry.example/app:1"}
		if containers > 1 {
			for j := range 40 {
				ctr.Env = append(ctr.Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: strings.Repeat("x", 64)})
			}
			ctr.Args = []string{"--listen=:8080", "--verbose", "--config=/etc/app/config.yaml"}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, ctr)
	}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceDelete(admin, pod) })
	unset := pod.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.128.10", PodIPs: []corev1.PodIP{{IP: "10.0.128.10"}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}
	if err := admin.Status().Patch(ctx, pod, client.MergeFrom(unset)); err != nil {
		t.Fatal(err)
	}
	return pod
}

// forceDelete removes a test object whatever its finalizers.
func forceDelete(admin client.Client, o client.Object) {
	ctx := context.Background()
	if err := admin.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		return
	}
	if len(o.GetFinalizers()) > 0 {
		_ = admin.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	}
	_ = admin.Delete(ctx, o, client.GracePeriodSeconds(0))
}

// tagCondition is the server-side apply the tagger's report makes.
func tagCondition(pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) *corev1ac.PodApplyConfiguration {
	return corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
		corev1ac.PodCondition().WithType(tagger.ConditionType).WithStatus(status).WithReason(reason).WithMessage(msg).
			WithObservedGeneration(pod.Generation).WithLastTransitionTime(metav1.Now())))
}

// fieldOwner is the tagger's field manager (internal/tagger).
const fieldOwner = "eni-operator-tagger"

func checkOperatorPolicy(t *testing.T, ns, saName, prefix string) {
	ctx := context.Background()
	admin := adminClient(t)
	op := serviceAccount(t, ns, saName, nil)
	appNS := prefix + "-apps"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	getPod := func(name string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: appNS, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The policy reaches the admission plugin through an informer, RBAC
	// through another: wait until a label change is refused by the policy.
	waitPolicyRefusesLabelChange(t, admin, op, appNS)

	// The tagger's writes, as internal/tagger makes them, on a plain pod
	// and on one with 100 big containers (the policy compares whole specs).
	for _, p := range []struct {
		name       string
		containers int
	}{{"web", 1}, {"big", 100}} {
		testPod(t, admin, appNS, p.name, p.containers)
		// recordOnPod: the last-applied annotations and the finalizer, one
		// merge patch.
		pod := getPod(p.name)
		orig := pod.DeepCopy()
		pod.Annotations[tagger.LastAppliedTagsAnnotation] = `{"team":"a"}`
		pod.Annotations[tagger.LastAppliedHashAnnotation] = "0123456789abcdef"
		controllerutil.AddFinalizer(pod, tagger.Finalizer)
		if err := op.Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
			t.Fatalf("%s: the tagger recording its tags on the pod: %v", p.name, err)
		}
		// report: the condition by server-side apply, then changed.
		if err := op.Status().Apply(ctx, tagCondition(pod, corev1.ConditionTrue, "Tagged", "tagged eni-1"), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("%s: the tagger's condition: %v", p.name, err)
		}
		if err := op.Status().Apply(ctx, tagCondition(pod, corev1.ConditionFalse, "AWSError", "CreateTags failed"), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("%s: the tagger changing its condition: %v", p.name, err)
		}
		// recordOnPod with nothing applied: annotations and finalizer go.
		pod = getPod(p.name)
		orig = pod.DeepCopy()
		delete(pod.Annotations, tagger.LastAppliedTagsAnnotation)
		delete(pod.Annotations, tagger.LastAppliedHashAnnotation)
		controllerutil.RemoveFinalizer(pod, tagger.Finalizer)
		if err := op.Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
			t.Fatalf("%s: the tagger removing its record: %v", p.name, err)
		}
		// clearCondition: apply a status without the condition.
		if err := op.Status().Apply(ctx, corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus()), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			t.Fatalf("%s: the tagger clearing its condition: %v", p.name, err)
		}
		got := getPod(p.name)
		if c := podCondition(got, tagger.ConditionType); c != nil {
			t.Errorf("%s: the tagger's condition not cleared: %+v", p.name, c)
		}
		if c := podCondition(got, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue || got.Labels["app"] != "web" || got.Annotations["team"] != "a" ||
			len(got.Finalizers) != 1 || got.Finalizers[0] != otherFinalizer {
			t.Errorf("%s: the tagger's writes changed what is not the tagger's: %+v %+v", p.name, got.ObjectMeta, got.Status.Conditions)
		}
		// The big pod: a stolen token still cannot change its last image.
		if p.containers > 1 {
			old := got.DeepCopy()
			got.Spec.Containers[p.containers-1].Image = "evil.example/miner:1"
			refusedByPolicy(t, "the operator changing a container image of a pod with 100 containers", op.Patch(ctx, got, client.MergeFrom(old)))
		}
	}

	// clearCondition's JSON patch: a condition another field manager
	// wrote (an older operator) is removed by index, after a test.
	pod := getPod("web")
	old := pod.DeepCopy()
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: tagger.ConditionType, Status: corev1.ConditionTrue,
		Reason: "Tagged", LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))})
	if err := admin.Status().Patch(ctx, pod, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	pod = getPod("web")
	for i, c := range pod.Status.Conditions {
		if c.Type != tagger.ConditionType {
			continue
		}
		ops, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/status/conditions/%d/type", i), "value": tagger.ConditionType},
			{"op": "remove", "path": fmt.Sprintf("/status/conditions/%d", i)},
		})
		if err := op.Status().Patch(ctx, pod, client.RawPatch(types.JSONPatchType, ops)); err != nil {
			t.Fatalf("the tagger removing an older operator's condition: %v", err)
		}
	}
	if c := podCondition(getPod("web"), tagger.ConditionType); c != nil {
		t.Errorf("the older operator's condition not removed: %+v", c)
	}

	// A stolen token, on a pod: every write RBAC lets through but the
	// tagger's is refused.
	pod = getPod("web")
	try := func(what string, change func(p *corev1.Pod)) {
		t.Helper()
		p := getPod("web")
		old := p.DeepCopy()
		change(p)
		refusedByPolicy(t, what, op.Patch(ctx, p, client.MergeFrom(old)))
	}
	try("the operator changing a pod's container image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "evil.example/miner:1" })
	try("the operator adding a label to a pod", func(p *corev1.Pod) { p.Labels["role"] = "db" })
	try("the operator changing a pod's label", func(p *corev1.Pod) { p.Labels["app"] = "db" })
	try("the operator changing another annotation of a pod", func(p *corev1.Pod) { p.Annotations["team"] = "b" })
	try("the operator adding another annotation to a pod", func(p *corev1.Pod) { p.Annotations["example.com/x"] = "y" })
	try("the operator removing another annotation of a pod", func(p *corev1.Pod) { delete(p.Annotations, "team") })
	try("the operator changing the tags a pod asks for (eni-tagger.io/tags)", func(p *corev1.Pod) { p.Annotations[tagger.DefaultAnnotationKey] = "team=b" })
	try("the operator adding another eni-tagger.io/ annotation to a pod", func(p *corev1.Pod) { p.Annotations["eni-tagger.io/other"] = "x" })
	try("the operator removing another finalizer of a pod", func(p *corev1.Pod) { p.Finalizers = nil })
	try("the operator adding another finalizer to a pod", func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "example.com/other") })
	try("the operator adding an owner reference to a pod (for the garbage collector to delete it)", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "0000-gone"}}
	})
	refusedByPolicy(t, "the operator setting a pod's Ready condition (server-side apply)",
		op.Status().Apply(ctx, corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
			corev1ac.PodCondition().WithType(corev1.PodReady).WithStatus(corev1.ConditionFalse).WithLastTransitionTime(metav1.Now()))),
			client.FieldOwner(fieldOwner), client.ForceOwnership))
	for what, change := range map[string]func(p *corev1.Pod){
		"the operator setting a pod's Ready condition (status patch)": func(p *corev1.Pod) { podCondition(p, corev1.PodReady).Status = corev1.ConditionFalse },
		"the operator changing a pod's IP":                            func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "10.0.0.99", []corev1.PodIP{{IP: "10.0.0.99"}} },
		"the operator changing a pod's phase":                         func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed },
		"the operator adding a pod condition of another type": func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/gate", Status: corev1.ConditionTrue})
		},
	} {
		p := getPod("web")
		old := p.DeepCopy()
		change(p)
		refusedByPolicy(t, what, op.Status().Patch(ctx, p, client.MergeFrom(old)))
	}
	// Nothing refused got through; another user is not restricted.
	got := getPod("web")
	if c := podCondition(got, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue || got.Labels["app"] != "web" || len(got.Labels) != 1 ||
		got.Annotations["team"] != "a" || got.Annotations[tagger.DefaultAnnotationKey] != "team=a" || len(got.Annotations) != 2 || got.Spec.Containers[0].Image != "registry.example/app:1" || len(got.Finalizers) != 1 ||
		len(got.OwnerReferences) != 0 || got.Status.PodIP != "10.0.128.10" || got.Status.Phase != corev1.PodRunning || len(got.Status.Conditions) != 2 {
		t.Errorf("a refused write changed the pod: %+v %+v", got.ObjectMeta, got.Status)
	}
	old = got.DeepCopy()
	got.Labels["role"] = "db"
	if err := admin.Patch(ctx, got, client.MergeFrom(old)); err != nil {
		t.Errorf("another user changing a pod's label: %v", err)
	}
	// The Multus readiness gate's condition, as internal/podaddrs writes it.
	if err := op.Status().Apply(ctx, corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
		corev1ac.PodCondition().WithType(podaddrs.GateCondition).WithStatus(corev1.ConditionFalse).WithReason(podaddrs.ReasonPending).
			WithMessage("waiting").WithLastTransitionTime(metav1.Now()))),
		client.FieldOwner("eni-operator-podaddrs"), client.ForceOwnership); err != nil {
		t.Errorf("the operator writing the readiness gate condition: %v", err)
	}
	if c := podCondition(getPod("web"), corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("the gate condition's write changed the Ready condition: %+v", c)
	}

	// dropFinalizer on a pod being deleted, and --remove-pod-finalizers
	// (tagger.RemoveFinalizers): only the tagger's finalizer goes.
	var pods []*corev1.Pod
	for _, name := range []string{"gone-1", "gone-2", "left"} {
		p := testPod(t, admin, appNS, name, 1)
		old := p.DeepCopy()
		controllerutil.AddFinalizer(p, tagger.Finalizer)
		if err := op.Patch(ctx, p, client.MergeFrom(old)); err != nil {
			t.Fatalf("the tagger adding its finalizer: %v", err)
		}
		pods = append(pods, p)
	}
	if err := admin.Delete(ctx, pods[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	p := getPod("gone-1")
	if p.DeletionTimestamp == nil {
		t.Fatal("the pod is not being deleted")
	}
	patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(p, tagger.Finalizer)
	if err := op.Patch(ctx, p, patch); err != nil {
		t.Errorf("the tagger dropping its finalizer from a pod being deleted: %v", err)
	}
	if n, err := tagger.RemoveFinalizers(ctx, op); err != nil || n != 2 {
		t.Errorf("--remove-pod-finalizers as the operator: %d pods, %v; want 2", n, err)
	}
	for _, name := range []string{"gone-1", "gone-2", "left"} {
		if f := getPod(name).Finalizers; len(f) != 1 || f[0] != otherFinalizer {
			t.Errorf("pod %s's finalizers %v; want only %s", name, f, otherFinalizer)
		}
	}

	checkOperatorNodeENIPolicy(t, admin, op, prefix)
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// The NodeENI controller's writes, as internal/nodeeni makes them: the
// finalizer added and removed by merge patch with an optimistic lock,
// the status (conditions, counts, observedGeneration) by a merge patch.
func checkOperatorNodeENIPolicy(t *testing.T, admin, op client.Client, prefix string) {
	ctx := context.Background()
	name := prefix + "-neni"
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"team": "a"}, Finalizers: []string{otherFinalizer}},
		Spec: v1alpha1.NodeENISpec{NodeSelector: map[string]string{"ng": "multi-eni"}, SubnetIDs: []string{"subnet-0123456789abcdef0"},
			SecurityGroupIDs: []string{"sg-0123456789abcdef0"}, DeviceIndex: 2}}
	if err := admin.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forceDelete(admin, &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	get := func() *v1alpha1.NodeENI {
		t.Helper()
		n := &v1alpha1.NodeENI{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	n := get()
	old := n.DeepCopy()
	controllerutil.AddFinalizer(n, nodeeni.Finalizer)
	if err := op.Patch(ctx, n, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("the controller adding its finalizer: %v", err)
	}
	for i, status := range []string{v1alpha1.AttachmentCreated, v1alpha1.AttachmentAttached} {
		n = get()
		old = n.DeepCopy()
		n.Status.ObservedGeneration = n.Generation
		n.Status.DesiredNodes, n.Status.ReadyNodes = 1, int32(i)
		meta.SetStatusCondition(&n.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionStatus([]string{"False", "True"}[i]),
			Reason: "Progress", Message: status, ObservedGeneration: n.Generation})
		if err := op.Status().Patch(ctx, n, client.MergeFrom(old)); err != nil {
			t.Fatalf("the controller's status write (%s): %v", status, err)
		}
	}
	if n = get(); !meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("the controller's status write did not land: %+v", n.Status)
	}

	try := func(what string, status bool, change func(n *v1alpha1.NodeENI)) {
		t.Helper()
		n := get()
		old := n.DeepCopy()
		change(n)
		if status {
			refusedByPolicy(t, what, op.Status().Patch(ctx, n, client.MergeFrom(old)))
		} else {
			refusedByPolicy(t, what, op.Patch(ctx, n, client.MergeFrom(old)))
		}
	}
	try("the operator changing a NodeENI's spec.subnetIDs", false, func(n *v1alpha1.NodeENI) { n.Spec.SubnetIDs = []string{"subnet-0fedcba9876543210"} })
	try("the operator changing a NodeENI's spec.securityGroupIDs", false, func(n *v1alpha1.NodeENI) { n.Spec.SecurityGroupIDs = []string{"sg-0fedcba9876543210"} })
	try("the operator adding a label to a NodeENI", false, func(n *v1alpha1.NodeENI) { n.Labels = map[string]string{"x": "y"} })
	try("the operator changing a NodeENI's annotation", false, func(n *v1alpha1.NodeENI) { n.Annotations["team"] = "b" })
	try("the operator removing another finalizer of a NodeENI", false, func(n *v1alpha1.NodeENI) { n.Finalizers = []string{nodeeni.Finalizer} })
	if n = get(); n.Spec.SubnetIDs[0] != "subnet-0123456789abcdef0" || n.Spec.SecurityGroupIDs[0] != "sg-0123456789abcdef0" || len(n.Labels) != 0 ||
		n.Annotations["team"] != "a" || len(n.Finalizers) != 2 {
		t.Errorf("a refused write changed the NodeENI: %+v %+v", n.ObjectMeta, n.Status)
	}

	// Deleted: the controller's status write, then its finalizer goes.
	if err := admin.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
	n = get()
	old = n.DeepCopy()
	n.Status.ReadyNodes = 0
	if err := op.Status().Patch(ctx, n, client.MergeFrom(old)); err != nil {
		t.Errorf("the controller's status write on a NodeENI being deleted: %v", err)
	}
	n = get()
	old = n.DeepCopy()
	controllerutil.RemoveFinalizer(n, nodeeni.Finalizer)
	if err := op.Patch(ctx, n, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Errorf("the controller removing its finalizer: %v", err)
	}
	if n = get(); len(n.Finalizers) != 1 || n.Finalizers[0] != otherFinalizer {
		t.Errorf("NodeENI finalizers %v; want only %s", n.Finalizers, otherFinalizer)
	}
}

// config/rbac's policy is the chart's, for the ServiceAccount
// eni-operator/eni-operator; the chart renders it whatever the values.
func TestOperatorPolicyInStep(t *testing.T) {
	c := newChart(t)
	policyInStep(t, c, "eni-operator-writes")
	for _, set := range [][]string{
		{"agent.enabled=true", "operator.flags.watch-namespace=team-a"},
		{"operator.serviceAccount.create=false", "operator.serviceAccount.name=byo"},
	} {
		objs := c.renderRelease(t, "pol", set...)
		vap := find(t, objs, "ValidatingAdmissionPolicy", "pol-eni-operator-writes")
		find(t, objs, "ValidatingAdmissionPolicyBinding", "pol-eni-operator-writes")
		if fp, _, _ := unstructured.NestedString(vap.Object, "spec", "failurePolicy"); fp != "Fail" {
			t.Errorf("%v: failurePolicy %q", set, fp)
		}
		sa := "pol-eni-operator"
		if strings.Contains(set[0], "create=false") {
			sa = "byo"
		}
		mc, _, _ := unstructured.NestedSlice(vap.Object, "spec", "matchConditions")
		if want := "system:serviceaccount:" + namespace + ":" + sa + "'"; !strings.Contains(fmt.Sprint(mc), want) {
			t.Errorf("%v: the policy matches %v; want the operator's ServiceAccount %s", set, mc, want)
		}
	}
}

// policyInStep checks that config/rbac's admission policy name and its
// binding are the chart's, rendered as release eni-operator in namespace
// eni-operator (the same ServiceAccount).
func policyInStep(t *testing.T, c chart, name string) {
	t.Helper()
	chartObjs, cfgObjs := c.renderRelease(t, "eni-operator"), kustomize(t, "rbac")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		want, _, _ := unstructured.NestedMap(find(t, chartObjs, kind, name).Object, "spec")
		got, _, _ := unstructured.NestedMap(find(t, cfgObjs, kind, name).Object, "spec")
		if mustYAML(t, got) != mustYAML(t, want) {
			t.Errorf("config/rbac's %s %s differs from the chart's:\n%s\nchart (for eni-operator/eni-operator):\n%s", kind, name, mustYAML(t, got), mustYAML(t, want))
		}
	}
}

// The whole operator (operator.NewManager, as the binary builds it) as
// the chart's ServiceAccount, with the chart's RBAC and admission
// policy, against the EC2 emulator, in --pod-finalizer mode: it tags a
// pod (annotations, finalizer, condition), brings a NodeENI to Ready
// (finalizer, status), then, both deleted, removes the pod's tags and
// the NodeENI's ENI and lets both go. Every write the operator makes
// passes the policy; the kubelet's condition and the user's metadata
// stay as they were.
func TestOperatorPolicyRealOperator(t *testing.T) {
	const (
		rel     = "opr"
		cluster = "opr-cluster"
		node    = "opr-node"
		appNS   = "opr-apps"
	)
	c := newChart(t)
	op := c.installOperator(t, operatorPolicyKinds, rel, "operator.flags.pod-finalizer=true")
	ctx := context.Background()
	admin := adminClient(t)
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitPolicyRefusesLabelChange(t, admin, op, appNS)

	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"), testenv.WithENIs(emulator.NetworkInterfaceSpec{
			Subnet: "pods", Tags: map[string]string{"Name": "pod-eni"}, Instance: testenv.NodeName(0), DeviceIndex: 2})))
	vpc, instance, podENI := e.VPC, e.World.Instances[0].ID, e.World.NetworkInterfaces[0]
	reader := e.Client(ec2.Config{QPS: 1000, Burst: 1000})

	testenv.CreateNode(t, admin, testenv.Node{Name: node, Instance: instance, Zone: "us-east-1a", Labels: map[string]string{"role": "opr-multus"}})
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}) })
	pod := testPod(t, admin, appNS, "web", 1)
	old := pod.DeepCopy()
	pod.Status.PodIP, pod.Status.PodIPs = podENI.PrivateIP, []corev1.PodIP{{IP: podENI.PrivateIP}}
	if err := admin.Status().Patch(ctx, pod, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	ne := testenv.CreateNodeENI(t, admin, "opr-multus", "opr-multus", "multus-a")
	t.Cleanup(func() { forceDelete(admin, &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: ne.Name}}) })

	oc := operatorenv.Config(cluster, vpc, namespace)
	oc.Tagger.PodFinalizer = true
	oc.Registerer = prometheus.NewRegistry()
	operatorenv.Start(t, asServiceAccount(t, namespace, rel+"-eni-operator"), e.URL, oc)

	eventuallyOK := func(what string, ok func() (bool, string)) {
		t.Helper()
		var detail string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			var good bool
			good, detail = ok()
			return good, nil
		}); err != nil {
			t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
	}
	getPod := func(p *corev1.Pod) error { return admin.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "web"}, p) }

	// Tagged: the ENI carries the pod's tag; the pod the tagger's record,
	// finalizer and condition, and still the user's and kubelet's.
	eventuallyOK("the pod tagged", func() (bool, string) {
		var p corev1.Pod
		if err := getPod(&p); err != nil {
			return false, err.Error()
		}
		e, err := reader.GetENI(ctx, podENI.ID)
		if err != nil {
			return false, err.Error()
		}
		c := podCondition(&p, tagger.ConditionType)
		return c != nil && c.Status == corev1.ConditionTrue && e.Tags["team"] == "a" && p.Annotations[tagger.LastAppliedHashAnnotation] != "" &&
				controllerutil.ContainsFinalizer(&p, tagger.Finalizer),
			fmt.Sprintf("condition %+v, annotations %v, finalizers %v, ENI tags %v", c, p.Annotations, p.Finalizers, e.Tags)
	})
	// Ready: the NodeENI's own ENI attached and in the node's ENINode,
	// its finalizer and status written.
	eventuallyOK("the NodeENI Ready", func() (bool, string) {
		var n v1alpha1.NodeENI
		if err := admin.Get(ctx, client.ObjectKeyFromObject(ne), &n); err != nil {
			return false, err.Error()
		}
		entries := testenv.Attachments(t, admin, n.Name)
		return meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady) && controllerutil.ContainsFinalizer(&n, nodeeni.Finalizer) &&
				len(entries) == 1 && entries[0].Status == v1alpha1.AttachmentAttached,
			fmt.Sprintf("finalizers %v, status %+v, entries %+v", n.Finalizers, n.Status, entries)
	})

	// Deleted: the tags and the ENI go, then the finalizers and objects.
	var p corev1.Pod
	if err := getPod(&p); err != nil {
		t.Fatal(err)
	}
	if c := podCondition(&p, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue || p.Labels["app"] != "web" || p.Annotations["team"] != "a" {
		t.Errorf("the operator changed what is not its own: %+v %+v", p.ObjectMeta, p.Status.Conditions)
	}
	old = p.DeepCopy()
	p.Finalizers = []string{tagger.Finalizer} // the user's own finalizer goes, by the user
	if err := admin.Patch(ctx, &p, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, &p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Delete(ctx, ne); err != nil {
		t.Fatal(err)
	}
	eventuallyOK("the pod's tags removed and the pod gone", func() (bool, string) {
		var p corev1.Pod
		err := getPod(&p)
		e, eerr := reader.GetENI(ctx, podENI.ID)
		if eerr != nil {
			return false, eerr.Error()
		}
		_, tagged := e.Tags["team"]
		return apierrors.IsNotFound(err) && !tagged, fmt.Sprintf("pod: %v, finalizers %v; ENI tags %v", err, p.Finalizers, e.Tags)
	})
	eventuallyOK("the NodeENI gone", func() (bool, string) {
		var n v1alpha1.NodeENI
		err := admin.Get(ctx, client.ObjectKeyFromObject(ne), &n)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v, finalizers %v, status %+v", err, n.Finalizers, n.Status)
	})
	enis, err := reader.ListENIs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range enis {
		if e.Tags[eniplan.TagCluster] == cluster {
			t.Errorf("the NodeENI's ENI %s is left: %+v", e.ID, e)
		}
	}
}
