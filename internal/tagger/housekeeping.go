package tagger

import (
	"context"
	"time"

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
	for k, l := range r.limiters {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(r.limiters, k)
		}
	}
}
