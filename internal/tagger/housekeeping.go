package tagger

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// pruneInterval is how often the tagger drops per-pod state that has
// gone back to its default: without it every pod ever written kept a
// rate limiter and a recent-record entry (~400 bytes a pod, 4 MiB at
// 10,000 pods) until the pod was deleted.
const pruneInterval = time.Minute

// housekeeping prunes the reconciler's per-pod state every interval.
func (r *Reconciler) housekeeping(interval time.Duration) manager.RunnableFunc {
	return func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case now := <-t.C:
				r.pruneLimiters(now)
				r.recent.prune(now)
			}
		}
	}
}

// pruneLimiters drops the per-pod rate limiters whose bucket is full: a
// full bucket allows what a new limiter allows, so rateLimited, which
// makes one when none is there, decides alike.
func (r *Reconciler) pruneLimiters(now time.Time) {
	r.limitMu.Lock()
	defer r.limitMu.Unlock()
	r.limiters = keepWhere(r.limiters, func(l *rate.Limiter) bool { return l.TokensAt(now) < float64(l.Burst()) })
}

// keepWhere returns a new map of m's entries that keep holds for. A Go
// map keeps the room of its peak when entries are deleted: per-pod state
// pruned in place after a burst of 100,000 pods kept tens of MiB of
// empty map behind.
func keepWhere[K comparable, V any](m map[K]V, keep func(V) bool) map[K]V {
	out := make(map[K]V)
	for k, v := range m {
		if keep(v) {
			out[k] = v
		}
	}
	return out
}

// without deletes k from m and returns m, or a new map in its place once
// that emptied it (see keepWhere): queues that drain after a burst give
// back its room.
func without[K comparable, V any](m map[K]V, k K) map[K]V {
	if _, ok := m[k]; !ok {
		return m
	}
	delete(m, k)
	if len(m) == 0 {
		return make(map[K]V)
	}
	return m
}
