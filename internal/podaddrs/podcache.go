package podaddrs

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// podIndex indexes the registration's pod cache by node.
const podIndex = "spec.nodeName"

// keepMultusPods is the transform of registration's own pod informer:
// a pod whose network status names a secondary network (or cannot be
// read, to be reported), or that names the readiness gate (gate.go), is
// kept as the few fields read here; every
// other pod, most of a cluster's, is a stub of name, namespace, UID and
// resource version. A pod going from kept to stub is still seen: the
// update's old object names its node.
func keepMultusPods() toolscache.TransformFunc {
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		v, has := p.Annotations[NetworkStatusAnnotation]
		if has {
			nets, err := parseNetworkStatus(v)
			has = err != nil || len(nets) > 0
		}
		if !has && !gated(p) || p.Spec.HostNetwork {
			return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion}}, nil
		}
		gates, conditions := keepGate(p)
		return &corev1.Pod{TypeMeta: p.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
				CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp, Annotations: statusOnly(p.Annotations)},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, ReadinessGates: gates},
			Status: corev1.PodStatus{Phase: p.Status.Phase, Conditions: conditions},
		}, nil
	}
}

// nodeOf returns the node of a kept pod ("" for a stub or an unbound pod).
func nodeOf(obj any) string {
	if p, ok := obj.(*corev1.Pod); ok {
		return p.Spec.NodeName
	}
	return ""
}

// indexByNode is the cache index of kept pods by node.
func indexByNode(obj any) []string {
	if n := nodeOf(obj); n != "" {
		return []string{n}
	}
	return nil
}

// statusOnly keeps the network status of a pod's annotations, if any.
func statusOnly(annotations map[string]string) map[string]string {
	if v, ok := annotations[NetworkStatusAnnotation]; ok {
		return map[string]string{NetworkStatusAnnotation: v}
	}
	return nil
}
