package tagger

import (
	"hash/fnv"
	"sync"
)

// warnings remembers the last Warning event each pod got, so a refusal
// that repeats (another reconcile of the same invalid annotation, an AWS
// error retried with backoff) is one event, not one per reconcile: the
// condition already says it, and a stream of identical events only
// crowds out others. Any other outcome clears the pod's entry, so the
// same refusal after a fix is reported again. Only a hash is kept.
type warnings struct {
	mu   sync.Mutex
	last map[string]uint64
}

// first reports whether this warning differs from the pod's last one,
// and records it.
func (w *warnings) first(key, uid, reason, message string) bool {
	h := fnv.New64a()
	for _, s := range []string{uid, reason, message} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	sum := h.Sum64()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]uint64{}
	}
	if prev, ok := w.last[key]; ok && prev == sum {
		return false
	}
	w.last[key] = sum
	return true
}

// clear forgets the pod's last warning.
func (w *warnings) clear(key string) {
	w.mu.Lock()
	delete(w.last, key)
	w.mu.Unlock()
}
