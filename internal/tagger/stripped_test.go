package tagger_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/tagger"
)

// A recorded pod stripped of everything of the tagger's while the
// operator is down (annotation, last-applied annotations, condition) is
// a stub in the cache; the restarted operator still reads it (through
// the API server) and removes its tags.
func TestStrippedRecordedPodIsReadThroughTheAPIServer(t *testing.T) {
	h, eni := syncedWebPod(t, "Team=Dev")
	h.eventually("ledger written", func() bool { return h.ledgerEntries() == 1 }, nil)
	h.stopManager()
	p := h.get("web")
	patch := client.MergeFrom(p.DeepCopy())
	for _, k := range []string{tagger.DefaultAnnotationKey, tagger.LastAppliedTagsAnnotation, tagger.LastAppliedHashAnnotation} {
		delete(p.Annotations, k)
	}
	if err := h.k8s.Patch(context.Background(), p, patch); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(p.DeepCopy())
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := h.k8s.Status().Patch(context.Background(), p, patch); err != nil {
		t.Fatal(err)
	}
	h.startManager(h.options())
	h.eventually("tags removed", func() bool { _, ok := h.eniTags(eni.ID)["Team"]; return !ok }, nil)
	want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	h.eventually("only the ENI's own tags left", func() bool { return maps.Equal(h.eniTags(eni.ID), want) },
		func() string { return fmt.Sprint("tags: ", h.eniTags(eni.ID)) })
	h.eventually("ledger entry dropped", func() bool { return h.ledgerEntries() == 0 }, nil)
}
