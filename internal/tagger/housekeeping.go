package tagger

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// pruneInterval is how often the tagger drops per-pod state that has
// gone back to its default: a full rate limiter, a record the cache has
// shown (pods.prune).
const pruneInterval = time.Minute

// pruneEvery prunes the per-pod state every interval.
func pruneEvery(p *pods, c clock.WithTicker, interval time.Duration) manager.RunnableFunc {
	return func(ctx context.Context) error {
		t := c.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case now := <-t.C():
				p.prune(now)
			}
		}
	}
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
