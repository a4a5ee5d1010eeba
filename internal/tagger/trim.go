package tagger

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TrimPod returns a cache transform that keeps only what the tagger reads
// of a pod. The informer holds every pod of the cluster, annotated or not;
// specs, labels, owner references and other controllers' conditions are
// most of a pod's bytes and none of the tagger's business. The tagger's
// writes never send back what was trimmed: annotations go by merge patch
// of the changed keys, the condition by server-side apply. An annotation
// over MaxAnnotationBytes is kept as a short stand-in that ParseAnnotation
// refuses with the original's size.
func TrimPod(annotationKey string) toolscache.TransformFunc {
	keep := []string{annotationKey, LastAppliedTagsAnnotation, LastAppliedHashAnnotation}
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		out := &corev1.Pod{
			TypeMeta: p.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
				Generation: p.Generation, DeletionTimestamp: p.DeletionTimestamp, Finalizers: p.Finalizers},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
			Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
		}
		for _, k := range keep {
			if v, ok := p.Annotations[k]; ok {
				if len(v) > MaxAnnotationBytes {
					// Refused unread anyway: the cache keeps a short
					// stand-in, not up to 256 KiB per pod.
					v = oversizeStandIn(v)
				}
				if out.Annotations == nil {
					out.Annotations = map[string]string{}
				}
				out.Annotations[k] = v
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == ConditionType {
				out.Status.Conditions = append(out.Status.Conditions, c)
			}
		}
		return out, nil
	}
}
