package tagger_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// The record patch replaces the pod's whole finalizer list, so it is sent
// with the pod's resourceVersion when it changes that list: a finalizer
// another controller added since the operator read the pod survives (the
// patch conflicts and is retried) instead of being dropped.
func TestRecordKeepsOtherControllersFinalizers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, emulator.World{})
	pod := h.pod("finalizers", "10.0.0.99", nil)
	stale := pod.DeepCopy()
	cur := &corev1.Pod{}
	if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
		t.Fatal(err)
	}
	cur.Finalizers = append(cur.Finalizers, "example.com/other")
	if err := h.k8s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	o := h.options()
	o.PodFinalizer = true
	err := tagger.RecordOnPod(ctx, h.k8s, o, stale, map[string]string{"Team": "Dev"}, "0123456789abcdef")
	if !apierrors.IsConflict(err) {
		t.Fatalf("recording on a stale pod: %v, want a conflict", err)
	}
	if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cur.Finalizers, "example.com/other") {
		t.Fatalf("another controller's finalizer was dropped: %v", cur.Finalizers)
	}
	// With the pod as it is now, the record goes through and keeps it.
	if err := tagger.RecordOnPod(ctx, h.k8s, o, cur, map[string]string{"Team": "Dev"}, "0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cur.Finalizers, "example.com/other") || !slices.Contains(cur.Finalizers, tagger.Finalizer) {
		t.Fatalf("finalizers %v, want both", cur.Finalizers)
	}
}
