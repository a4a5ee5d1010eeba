package tagger

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RecordOnPod exposes writeLastApplied to the package's envtest tests.
func RecordOnPod(ctx context.Context, c client.Client, o Options, pod *corev1.Pod, applied map[string]string, hash string) error {
	w := podWriter{client: c, finalizer: o.PodFinalizer}
	return w.writeLastApplied(ctx, pod, applied, hash)
}
