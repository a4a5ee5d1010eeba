package tagger

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// A limiter is dropped only once its bucket is full again (a new one
// would decide alike); a recent-record entry once its window is over.
func TestHousekeepingPrunesPerPodState(t *testing.T) {
	r := &Reconciler{opts: Options{PodRateLimitQPS: 1, PodRateLimitBurst: 2}, limiters: map[string]*rate.Limiter{}}
	if d := r.rateLimited("ns/a"); d != 0 {
		t.Fatalf("first write of ns/a waits %s", d)
	}
	now := time.Now()
	r.pruneLimiters(now)
	if _, ok := r.limiters["ns/a"]; !ok {
		t.Fatal("a limiter with a token spent was dropped: the pod's next write would get a full burst again")
	}
	r.pruneLimiters(now.Add(2 * time.Second)) // 1 token/s refills it
	if len(r.limiters) != 0 {
		t.Fatalf("%d limiters left with full buckets", len(r.limiters))
	}

	r.recent.note("ns/a", "u1", "h1", now)
	r.recent.note("ns/b", "u2", "h2", now.Add(recentWindow))
	r.recent.prune(now.Add(recentWindow))
	if _, ok := r.recent.byKey["ns/a"]; ok {
		t.Fatal("an entry past its window was kept")
	}
	if _, ok := r.recent.byKey["ns/b"]; !ok {
		t.Fatal("an entry within its window was dropped")
	}
}

// Pruned or drained per-pod maps are new maps, so a burst's peak room is
// given back; what they hold is unchanged.
func TestPrunedMapsAreNewMaps(t *testing.T) {
	ptr := func(m map[string]int) uintptr { return reflect.ValueOf(m).Pointer() }
	m := map[string]int{"a": 1, "b": 2, "c": 3}
	kept := keepWhere(m, func(v int) bool { return v != 2 })
	if !maps.Equal(kept, map[string]int{"a": 1, "c": 3}) || ptr(kept) == ptr(m) {
		t.Errorf("keepWhere: %v (same map: %v)", kept, ptr(kept) == ptr(m))
	}
	same := without(kept, "a")
	if !maps.Equal(same, map[string]int{"c": 3}) || ptr(same) != ptr(kept) {
		t.Errorf("without a key of two: %v (new map: %v); want the same map", same, ptr(same) != ptr(kept))
	}
	if again := without(same, "missing"); ptr(again) != ptr(same) {
		t.Error("without a key not there made a new map")
	}
	empty := without(same, "c")
	if len(empty) != 0 || empty == nil || ptr(empty) == ptr(same) {
		t.Errorf("without the last key: %v (same map: %v); want a new empty map", empty, ptr(empty) == ptr(same))
	}
}
