package tagger_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/tagger"
)

// A crash after the ENI writes but before the ledger's batch went out
// (the ledger ConfigMaps emptied while the operator is down: the state
// such a crash leaves) loses nothing: running pods are recorded again
// from their ENI and annotations without an AWS write, and a pod deleted
// meanwhile (held by --pod-finalizer) has its tags removed from its ENI.
func TestLedgerLostInACrashIsRecovered(t *testing.T) {
	const n = 4
	h := newHarness(t, branchWorld(n))
	o := h.options()
	o.PodFinalizer = true
	h.startManager(o)
	h.pods(n, 2)
	h.waitSynced(n)
	h.eventually("the ledger written", func() bool { return h.ledgerEntries() == n }, nil)
	h.stopManager()

	ctx := context.Background()
	for _, cm := range h.ledgerMaps() {
		if strings.HasPrefix(cm.Name, "eni-tagger-cache-") && len(cm.Data) > 0 {
			cm.Data = nil
			if err := h.k8s.Update(ctx, &cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-0000", Namespace: h.ns}}
	if err := h.k8s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	eni := h.loaded.NetworkInterfaces[0].ID
	if tags := h.eniTags(eni); tags["App"] == "" || tags[tagger.HashTag] == "" {
		t.Fatalf("ENI %s before the restart: %v, want the pod's tags", eni, tags)
	}

	h.emu.ResetCounts()
	h.startManager(o)
	h.eventually("the deleted pod released", func() bool {
		return apierrors.IsNotFound(h.k8s.Get(ctx, client.ObjectKeyFromObject(gone), gone))
	}, nil)
	h.eventually("the running pods recorded again", func() bool { return h.metric("eni_operator_tagger_cache_entries") == n-1 }, nil)
	calls := h.calls()
	if calls["CreateTags"] != 0 || calls["DeleteTags"] != 1 {
		t.Fatalf("EC2 calls after the restart: %v, want no CreateTags and one DeleteTags (the deleted pod's tags)", calls)
	}
	tags := h.eniTags(eni)
	for _, k := range []string{"App", "Team", tagger.HashTag} {
		if v, ok := tags[k]; ok {
			t.Fatalf("ENI %s keeps %s=%s of the pod deleted while the operator was down: %v", eni, k, v, tags)
		}
	}
}
