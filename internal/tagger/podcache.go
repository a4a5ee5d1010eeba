package tagger

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// PodMarks are the names that make a pod the tagger's, with annotationKey
// the annotation pods ask with (--annotation-key).
func PodMarks(annotationKey string) podcache.Marks {
	return podcache.Marks{Asked: annotationKey, AppliedTags: LastAppliedTagsAnnotation, AppliedHash: LastAppliedHashAnnotation,
		Finalizer: Finalizer, Condition: ConditionType}
}

// PodCache returns the manager's cache settings for the tagger's pods:
// the transform for the pod informer (limited to --watch-namespace when
// set) and the cache to build. Pods with nothing of the tagger's are
// stubs (podcache.Stub, podcache.New) unless --allow-shared-eni-tagging
// lists pods by node, which needs every pod whole.
func PodCache(o Options) (cache.ByObject, cache.NewCacheFunc) {
	var byObject cache.ByObject
	if o.WatchNamespace != "" {
		byObject.Namespaces = map[string]cache.Config{o.WatchNamespace: {}}
	}
	marks := PodMarks(o.AnnotationKey)
	if o.AllowSharedENITagging {
		byObject.Transform = podcache.Trim(marks)
		return byObject, cache.New
	}
	var selects func(*corev1.Pod) bool
	if o.Policies != nil {
		selects = func(p *corev1.Pod) bool { return o.Policies.selects(context.Background(), p.Namespace, p.Labels) }
	}
	byObject.Transform = podcache.Stub(marks, selects)
	return byObject, podcache.New(marks)
}
