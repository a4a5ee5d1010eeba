// Package podcache is the tagger's pod cache: it keeps of each pod only
// what the tagger reads, in a compact form, and of pods the tagger has no
// business with only a stub. Its contract with controller-runtime's cache
// is tested in contract_test.go against a real API server.
package podcache

import (
	"context"
	"slices"
	"unique"

	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Marks are the names that make a pod the tagger's business: the
// annotation pods ask with, the annotations and finalizer the tagger
// writes, and its condition.
type Marks struct {
	Asked, AppliedTags, AppliedHash string
	Finalizer                       string
	Condition                       corev1.PodConditionType
}

// Trim returns a cache transform that keeps only what the tagger reads
// of a pod. The informer holds every pod of the cluster, annotated or not;
// specs, other controllers' conditions and annotations are most of a
// pod's bytes and none of the tagger's business (labels and the
// controller's reference stay: tag policies read them). The tagger's
// writes never send back what was trimmed: annotations go by merge patch
// of the changed keys, the condition by server-side apply. An annotation
// over tagplan.MaxAnnotationBytes is kept as a short stand-in that tagplan.ParseAnnotation
// refuses with the original's size.
func Trim(m Marks) toolscache.TransformFunc {
	trim := trimmer(m)
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return trim(p), nil
	}
}

// Stub returns the pod cache's transform: a Pod (what Trim
// keeps, in a third of a Pod's bytes) for the pods the tagger has
// business with, and for the others (most of a cluster's pods) a
// PartialObjectMetadata stub of name, namespace, UID and resource
// version, a quarter of the smallest Pod's bytes. The stub is enough for
// the informer (keys, events) and for the predicate, which lets no stub
// through unless the ledger recorded the pod; a read of a stubbed pod
// goes to the API server (New). A pod the tagger touched keeps its
// condition, so it stays a Pod in the cache.
//
// A pod a tag policy selects (selects) is kept whole too. One that a
// policy created later selects is a stub until the policy controller
// brings it to a reconcile, which reads it from the API server.
func Stub(m Marks, selects func(*corev1.Pod) bool) toolscache.TransformFunc {
	trim := trimmer(m)
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		if !m.On(p) && (selects == nil || !selects(p)) {
			return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}}, nil
		}
		return compact(trim(p), m), nil
	}
}

// On reports whether a pod carries anything of the tagger's: the
// annotation it reads, those it writes, its finalizer or its condition.
func (m Marks) On(p *corev1.Pod) bool {
	for _, k := range []string{m.Asked, m.AppliedTags, m.AppliedHash} {
		if _, ok := p.Annotations[k]; ok {
			return true
		}
	}
	if controllerutil.ContainsFinalizer(p, m.Finalizer) {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == m.Condition {
			return true
		}
	}
	return false
}

func trimmer(m Marks) func(*corev1.Pod) *corev1.Pod {
	keep := []string{m.Asked, m.AppliedTags, m.AppliedHash}
	// Strings many pods share (namespace, node, phase, the annotations
	// of a tag set, which a deployment's pods have in common, and the
	// condition's status and reason) are kept once (intern), not once
	// per pod.
	return func(p *corev1.Pod) *corev1.Pod {
		out := &corev1.Pod{
			TypeMeta: p.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: Intern(p.Namespace), UID: p.UID, ResourceVersion: p.ResourceVersion,
				Generation: p.Generation, DeletionTimestamp: p.DeletionTimestamp, Finalizers: internAll(p.Finalizers),
				Labels: internMap(p.Labels), OwnerReferences: controllerRefOnly(p.OwnerReferences)},
			Spec:   corev1.PodSpec{NodeName: Intern(p.Spec.NodeName), HostNetwork: p.Spec.HostNetwork, ServiceAccountName: Intern(p.Spec.ServiceAccountName)},
			Status: corev1.PodStatus{Phase: corev1.PodPhase(Intern(string(p.Status.Phase))), PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
		}
		for _, k := range keep {
			if v, ok := p.Annotations[k]; ok {
				if len(v) > tagplan.MaxAnnotationBytes {
					// Refused unread anyway: the cache keeps a short
					// stand-in, not up to 256 KiB per pod.
					v = tagplan.OversizeStandIn(v)
				}
				if out.Annotations == nil {
					out.Annotations = make(map[string]string, len(keep))
				}
				out.Annotations[k] = Intern(v)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == m.Condition {
				// Not the message: it names the pod's ENI.
				c.Type, c.Status, c.Reason = m.Condition, corev1.ConditionStatus(Intern(string(c.Status))), Intern(c.Reason)
				out.Status.Conditions = append(out.Status.Conditions, c)
			}
		}
		return out
	}
}

// Pod is what the pod cache holds of a pod the tagger has business
// with: the fields Trim keeps, without the rest of a Pod's struct
// (370 bytes against 1,240). Readers never see one: its DeepCopyObject,
// which the cache's Get and List call, returns the *corev1.Pod Trim
// would have kept. Event handlers and predicates get the cached object;
// AsPod reads either.
type Pod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	NodeName       string
	ServiceAccount string
	HostNetwork    bool
	Phase          corev1.PodPhase
	PodIP          string
	PodIPs         []corev1.PodIP
	// Conditions are the tagger's own (ConditionType).
	Conditions []corev1.PodCondition
	// annotations, labels and owner stand for ObjectMeta's Annotations,
	// Labels and OwnerReferences (the controller's), which compact leaves
	// nil (GetAnnotations, GetLabels, GetOwnerReferences, Pod).
	annotations unique.Handle[taggerAnnotations]
	labels      unique.Handle[labelSet]
	owner       unique.Handle[ownerRef]
}

var _ client.Object = &Pod{}

func compact(p *corev1.Pod, m Marks) *Pod {
	c := &Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta,
		NodeName: p.Spec.NodeName, ServiceAccount: p.Spec.ServiceAccountName, HostNetwork: p.Spec.HostNetwork, Phase: p.Status.Phase, PodIP: p.Status.PodIP,
		PodIPs: p.Status.PodIPs, Conditions: p.Status.Conditions}
	c.Annotations, c.Labels, c.OwnerReferences = nil, nil, nil
	c.annotations = newTaggerAnnotations(m, p.Annotations)
	c.labels, c.owner = newLabelSet(p.Labels), controllerRef(p.OwnerReferences)
	return c
}

// taggerAnnotations are the annotations the tagger reads of a pod (the
// asked tags under the configured key, the applied tags and their hash),
// held as one comparable value: once synced, the pods of a deployment
// carry the same three, and unique.Make keeps one copy for all of them
// instead of a map per pod (half a KiB each; 50 MiB at 100,000 pods).
type taggerAnnotations struct {
	keys                 [3]string // Marks' Asked, AppliedTags, AppliedHash
	asked, applied, hash string
	hasAsked, hasApplied bool
	hasHash              bool
}

// newTaggerAnnotations returns the handle of a's tagger annotations; a
// zero handle when it has none.
func newTaggerAnnotations(m Marks, a map[string]string) unique.Handle[taggerAnnotations] {
	if len(a) == 0 {
		return unique.Handle[taggerAnnotations]{}
	}
	t := taggerAnnotations{keys: [3]string{m.Asked, m.AppliedTags, m.AppliedHash}}
	t.asked, t.hasAsked = a[m.Asked]
	t.applied, t.hasApplied = a[m.AppliedTags]
	t.hash, t.hasHash = a[m.AppliedHash]
	return unique.Make(t)
}

// toMap returns the annotations as a new map (nil when none).
func (t taggerAnnotations) toMap() map[string]string {
	var m map[string]string
	for _, kv := range []struct {
		key, value string
		ok         bool
	}{{t.keys[0], t.asked, t.hasAsked}, {t.keys[1], t.applied, t.hasApplied}, {t.keys[2], t.hash, t.hasHash}} {
		if kv.ok {
			if m == nil {
				m = make(map[string]string, 3)
			}
			m[kv.key] = kv.value
		}
	}
	return m
}

// GetAnnotations returns the pod's tagger annotations in a new map:
// predicates read the cached object itself. Annotations set on it since
// (SetAnnotations) win.
func (c *Pod) GetAnnotations() map[string]string {
	if c.Annotations != nil || c.annotations == (unique.Handle[taggerAnnotations]{}) {
		return c.Annotations
	}
	return c.annotations.Value().toMap()
}

// Pod returns the trimmed Pod c stands for, sharing nothing changeable
// with c.
func (c *Pod) Pod() *corev1.Pod {
	p := &corev1.Pod{TypeMeta: c.TypeMeta,
		Spec:   corev1.PodSpec{NodeName: c.NodeName, ServiceAccountName: c.ServiceAccount, HostNetwork: c.HostNetwork},
		Status: corev1.PodStatus{Phase: c.Phase, PodIP: c.PodIP, PodIPs: slices.Clone(c.PodIPs), Conditions: slices.Clone(c.Conditions)}}
	c.DeepCopyInto(&p.ObjectMeta)
	if p.Annotations == nil {
		p.Annotations = c.GetAnnotations()
	}
	if p.Labels == nil {
		p.Labels = c.GetLabels()
	}
	if p.OwnerReferences == nil {
		p.OwnerReferences = c.GetOwnerReferences()
	}
	return p
}

// GetLabels returns the pod's labels in a new map, unless set since.
func (c *Pod) GetLabels() map[string]string {
	if c.Labels != nil || c.labels == (unique.Handle[labelSet]{}) {
		return c.Labels
	}
	return c.labels.Value().toMap()
}

// GetOwnerReferences returns the pod's controller reference, unless
// references were set since.
func (c *Pod) GetOwnerReferences() []metav1.OwnerReference {
	if c.OwnerReferences != nil || c.owner == (unique.Handle[ownerRef]{}) {
		return c.OwnerReferences
	}
	return c.owner.Value().refs()
}

// DeepCopyObject returns the Pod (see Pod): a copy in the form
// every reader of the cache asks for.
func (c *Pod) DeepCopyObject() runtime.Object { return c.Pod() }

// AsPod returns obj as a Pod: itself, or the Pod a Pod stands for;
// false for anything else (a stub).
func AsPod(obj any) (*corev1.Pod, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o, true
	case *Pod:
		return o.Pod(), true
	}
	return nil, false
}

// Intern returns the one copy of s the process keeps (unique.Make).
func Intern(s string) string { return unique.Make(s).Value() }

// internMap returns a new map of m's strings, interned (nil when empty).
func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[Intern(k)] = Intern(v)
	}
	return out
}

// internAll returns a new slice of ss's strings, interned (finalizer
// names: a handful shared by every pod).
func internAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Intern(s)
	}
	return out
}

// New returns a cache.NewCacheFunc for a cache whose pods are
// transformed by Stub: a Get that fails on a stub reads the pod from
// the API server instead, trimmed as Trim would (rare: a stub passes
// the predicate only when the ledger recorded the pod and everything of
// the tagger's was removed from it). A List fails on a stub, so with
// --allow-shared-eni-tagging, which lists pods by node, every pod is
// kept whole (Trim).
func New(m Marks) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		api, err := client.New(cfg, client.Options{Scheme: opts.Scheme, Mapper: opts.Mapper})
		if err != nil {
			return nil, err
		}
		return stubReadThrough{Cache: c, api: api, trim: trimmer(m)}, nil
	}
}

type stubReadThrough struct {
	cache.Cache
	api  client.Reader
	trim func(*corev1.Pod) *corev1.Pod
}

func (s stubReadThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := s.Cache.Get(ctx, key, obj, opts...)
	pod, isPod := obj.(*corev1.Pod)
	if err == nil || !isPod || apierrors.IsNotFound(err) || ctx.Err() != nil {
		return err
	}
	if err := s.api.Get(ctx, key, pod); err != nil {
		return err
	}
	*pod = *s.trim(pod)
	return nil
}
