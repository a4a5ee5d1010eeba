package podcache_test

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// Pods with nothing of the tagger's are cached as metadata stubs; any of
// the annotation, the tagger's own annotations, its finalizer, its
// condition or a tag policy's selection keeps the pod a (trimmed) Pod,
// with the labels, controller reference and service account policies
// read.
func TestStubPodKeepsPodsWithTaggerState(t *testing.T) {
	const key = "example.com/tags"
	stub := podcache.Stub(tagger.PodMarks(key), func(p *corev1.Pod) bool { return p.Labels["cost"] == "tracked" })
	yes := true
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs1", Controller: &yes}
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"other": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "not-a-controller"}, owner}},
			Spec:   corev1.PodSpec{NodeName: "n1", ServiceAccountName: "web", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady}}}}
		mod(p)
		return p
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		wantStub bool
	}{
		"no tagger state":   {pod(func(*corev1.Pod) {}), true},
		"default key only":  {pod(func(p *corev1.Pod) { p.Annotations[tagger.DefaultAnnotationKey] = "a=b" }), true},
		"annotation":        {pod(func(p *corev1.Pod) { p.Annotations[key] = "a=b" }), false},
		"last-applied tags": {pod(func(p *corev1.Pod) { p.Annotations[tagger.LastAppliedTagsAnnotation] = "{}" }), false},
		"last-applied hash": {pod(func(p *corev1.Pod) { p.Annotations[tagger.LastAppliedHashAnnotation] = "h" }), false},
		"finalizer":         {pod(func(p *corev1.Pod) { p.Finalizers = []string{"x", tagger.Finalizer} }), false},
		"condition": {pod(func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: tagger.ConditionType})
		}), false},
		"other finalizer":       {pod(func(p *corev1.Pod) { p.Finalizers = []string{"x"} }), true},
		"selected by a policy":  {pod(func(p *corev1.Pod) { p.Labels["cost"] = "tracked" }), false},
		"no annotations at all": {pod(func(p *corev1.Pod) { p.Annotations = nil }), true},
	}
	for name, c := range cases {
		out, err := stub(c.pod)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch o := out.(type) {
		case *metav1.PartialObjectMetadata:
			want := metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7"}
			if !c.wantStub || o.Kind != "Pod" || o.APIVersion != "v1" || !equalMeta(o.ObjectMeta, want) {
				t.Errorf("%s: stub %+v", name, o)
			}
		case *podcache.Pod:
			p := o.Pod()
			if c.wantStub || p.Spec.NodeName != "n1" || p.Status.PodIP != "10.0.0.1" || len(p.Spec.Containers) != 0 ||
				p.Spec.ServiceAccountName != "web" || !maps.Equal(p.Labels, c.pod.Labels) || !maps.Equal(o.GetLabels(), c.pod.Labels) ||
				len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "rs1" || !*p.OwnerReferences[0].Controller {
				t.Errorf("%s: pod %+v", name, p)
			}
		default:
			t.Errorf("%s: %T", name, out)
		}
	}
}

// A CachedPod hands every reader the Pod TrimPod keeps (its
// DeepCopyObject is what the cache's Get and List call), and a reader
// changing that Pod changes nothing in the cache.
func TestCachedPodReadsAsTheTrimmedPod(t *testing.T) {
	const key = "example.com/tags"
	now := metav1.Now()
	full := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "7", Generation: 3,
		DeletionTimestamp: &now, Finalizers: []string{tagger.Finalizer, "other"}, Labels: map[string]string{"app": "x"},
		Annotations: map[string]string{key: "a=b", tagger.LastAppliedHashAnnotation: "h", "unrelated": "x"}},
		Spec: corev1.PodSpec{NodeName: "n1", HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady}, {Type: tagger.ConditionType, Status: corev1.ConditionTrue, Reason: "Tagged", Message: "eni-1"}}}}
	trimmed, err := podcache.Trim(tagger.PodMarks(key))(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cachedObj, err := podcache.Stub(tagger.PodMarks(key), nil)(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := cachedObj.(*podcache.Pod)
	if !ok {
		t.Fatalf("StubPod kept a %T, want a CachedPod", cachedObj)
	}
	read, ok := cached.DeepCopyObject().(*corev1.Pod)
	if !ok || !equality.Semantic.DeepEqual(read, trimmed) {
		t.Fatalf("the cache hands out\n%+v\nwant TrimPod's\n%+v", read, trimmed)
	}
	read.Annotations[key] = "changed"
	read.Finalizers[0] = "changed"
	read.Status.PodIPs[0].IP = "changed"
	read.Status.Conditions[0].Reason = "changed"
	if again := cached.Pod(); !equality.Semantic.DeepEqual(again, trimmed) {
		t.Fatalf("a reader's change reached the cache: %+v", again)
	}
	if p, ok := podcache.AsPod(cached); !ok || p.Spec.NodeName != "n1" {
		t.Fatalf("AsPod(CachedPod) = %v, %v", p, ok)
	}
	if _, ok := podcache.AsPod(&metav1.PartialObjectMetadata{}); ok {
		t.Fatal("AsPod took a stub for a pod")
	}
}

func equalMeta(a, b metav1.ObjectMeta) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace && a.UID == b.UID && a.ResourceVersion == b.ResourceVersion &&
		a.Labels == nil && a.Annotations == nil && a.Finalizers == nil
}

// Synced pods of one deployment carry the same three tagger annotations:
// their cached forms share one copy, and each read still gets a map of
// its own.
func TestCachedPodsShareEqualAnnotations(t *testing.T) {
	const key = "example.com/tags"
	pod := func(name string) *podcache.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Annotations: map[string]string{key: "a=b", tagger.LastAppliedTagsAnnotation: `{"a":"b"}`, tagger.LastAppliedHashAnnotation: "h", "other": "x"}}}
		c, err := podcache.Stub(tagger.PodMarks(key), nil)(p)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*podcache.Pod)
	}
	one, two := pod("one"), pod("two")
	if one.Annotations != nil {
		t.Errorf("the cached pod holds a map of its own: %v", one.Annotations)
	}
	want := map[string]string{key: "a=b", tagger.LastAppliedTagsAnnotation: `{"a":"b"}`, tagger.LastAppliedHashAnnotation: "h"}
	a, b := one.GetAnnotations(), two.GetAnnotations()
	if !maps.Equal(a, want) || !maps.Equal(b, want) {
		t.Fatalf("annotations %v and %v; want %v", a, b, want)
	}
	a[key] = "changed"
	if got := one.Pod().Annotations[key]; got != "a=b" {
		t.Errorf("a reader's change reached the cache: %q", got)
	}
	one.SetAnnotations(map[string]string{key: "set"})
	if got := one.GetAnnotations()[key]; got != "set" {
		t.Errorf("after SetAnnotations: %q", got)
	}
	if got := one.Pod().Annotations; !maps.Equal(got, map[string]string{key: "set"}) {
		t.Errorf("Pod() after SetAnnotations: %v", got)
	}
}
