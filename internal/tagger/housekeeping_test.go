package tagger

import (
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
