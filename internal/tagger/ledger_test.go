package tagger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

func (h *harness) newLedger(o tagger.LedgerOptions) *tagger.Ledger {
	o.Namespace, o.Name = h.opsNS, "ledger"
	return tagger.NewLedger(h.k8s, o)
}

// The ledger never exceeds its shard size, is written in batches, and a
// deleted record never comes back, across restarts.
func TestLedgerLimitsBatchesAndDeletes(t *testing.T) {
	h := newHarness(t, emulator.World{})
	ctx := context.Background()
	l := h.newLedger(tagger.LedgerOptions{Shards: 2, MaxShardBytes: 4096, BatchSize: 1000, BatchInterval: time.Hour})
	if err := l.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		l.Put(tagger.Record{Pod: fmt.Sprintf("ns/p-%d", i), UID: fmt.Sprintf("uid-%03d", i), ENI: "eni-1", Tags: map[string]string{"Team": "Dev"}, Hash: "h"})
	}
	if n := h.cmCount("ledger-"); n != 0 {
		t.Fatalf("%d ConfigMaps written before the batch went out", n)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, cm := range h.ledgerMaps() {
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		if size > 4096 {
			t.Fatalf("%s holds %d bytes, over the 4096 limit", cm.Name, size)
		}
		total += len(cm.Data)
	}
	if total == 0 || total >= 100 {
		t.Fatalf("%d records persisted; want some, and the rest refused for size", total)
	}

	// Deletions win over earlier writes, even after a restart.
	big := h.newLedger(tagger.LedgerOptions{Shards: 2, BatchSize: 1000, BatchInterval: time.Hour})
	if err := big.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		big.Put(tagger.Record{Pod: fmt.Sprintf("ns/q-%d", i), UID: fmt.Sprintf("q-%d", i), ENI: "eni-2"})
	}
	if err := big.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	big.Delete("ns/q-3")
	big.Put(tagger.Record{Pod: "ns/q-4", UID: "q-4-new", ENI: "eni-3"}) // same pod name, new pod
	if err := big.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, m := len(big.OnENI("eni-2")), len(big.OnENI("eni-3")); n != 8 || m != 1 {
		t.Fatalf("records by ENI: eni-2 %d (want 8), eni-3 %d (want 1)", n, m)
	}
	again := h.newLedger(tagger.LedgerOptions{Shards: 2})
	if err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get("ns/q-3"); ok {
		t.Fatal("a deleted record came back")
	}
	if r, ok := again.Get("ns/q-4"); !ok || r.UID != "q-4-new" {
		t.Fatalf("replaced record: %+v %v", r, ok)
	}
	if r, ok := again.Get("ns/q-5"); !ok || r.ENI != "eni-2" {
		t.Fatalf("record lost: %+v %v", r, ok)
	}
}

func (h *harness) ledgerMaps() []corev1.ConfigMap {
	var list corev1.ConfigMapList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.opsNS)); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) cmCount(prefix string) int {
	n := 0
	for _, cm := range h.ledgerMaps() {
		if len(cm.Name) >= len(prefix) && cm.Name[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// A restart with everything in sync writes no ConfigMap: putting a record
// the ledger already holds, as every reconcile after a restart does,
// changes nothing to write.
func TestLedgerRestartInSyncWritesNothing(t *testing.T) {
	h := newHarness(t, emulator.World{})
	ctx := context.Background()
	writes := 0
	o := tagger.LedgerOptions{Shards: 4, BatchSize: 1000, BatchInterval: time.Hour,
		OnFlush: func(int, int, int, int) { writes++ }}
	first := h.newLedger(o)
	if err := first.Load(ctx); err != nil {
		t.Fatal(err)
	}
	records := make([]tagger.Record, 50)
	for i := range records {
		records[i] = tagger.Record{Pod: fmt.Sprintf("ns/p-%d", i), UID: fmt.Sprintf("uid-%d", i), ENI: "eni-1", Tags: map[string]string{"Team": "Dev"}, Hash: "h"}
		first.Put(records[i])
	}
	if err := first.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	written := writes
	restarted := h.newLedger(o)
	if err := restarted.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		restarted.Put(r)
	}
	if err := restarted.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if writes != written {
		t.Fatalf("a restart in sync wrote %d ledger ConfigMaps, want 0", writes-written)
	}
	records[7].Tags = map[string]string{"Team": "Ops"}
	restarted.Put(records[7])
	if err := restarted.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if writes != written+1 {
		t.Fatalf("one changed record wrote %d ConfigMaps, want 1", writes-written)
	}
}
