package tagger

import (
	"hash/fnv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pods is the tagger's one owner of what must outlive a pod's reconcile;
// the ledger holds what was applied, durably. One lock guards every
// entry, and every method leaves the table with no empty entry: an entry
// goes when nothing in it is left.
type pods struct {
	mu    sync.Mutex
	byKey map[string]*podState
	// waitingOn indexes byKey's waitingOn: the pods in Conflict on each
	// ENI, brought back when a record there is released.
	waitingOn map[string]map[string]struct{}
}

// podState is one pod's entry.
type podState struct {
	// wrote is the last-applied annotations a reconcile has just put on
	// the pod, until the cache shows them (lastapplied.go).
	wrote *lastAppliedWrite
	// limiter applies --pod-rate-limit-qps to the pod's writes.
	limiter *rate.Limiter
	// warned is a hash of the pod's last Warning event (0: none since its
	// last other outcome), so a repeated refusal is one event.
	warned uint64
	// waitingOn is the ENI the pod was refused on as Conflict.
	waitingOn string
}

func (s *podState) empty() bool {
	return s.wrote == nil && s.limiter == nil && s.warned == 0 && s.waitingOn == ""
}

func newPods() *pods {
	return &pods{byKey: map[string]*podState{}, waitingOn: map[string]map[string]struct{}{}}
}

// update runs change on the pod's entry under the lock, made if missing
// and dropped if change leaves it empty.
func (p *pods) update(key string, change func(*podState)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updateLocked(key, change)
}

func (p *pods) updateLocked(key string, change func(*podState)) {
	s, ok := p.byKey[key]
	if !ok {
		s = &podState{}
	}
	change(s)
	switch {
	case s.empty() && ok:
		p.byKey = without(p.byKey, key)
	case !s.empty() && !ok:
		p.byKey[key] = s
	}
}

// forget empties a pod's entry (the pod is gone or replaced).
func (p *pods) forget(key string) {
	p.update(key, func(s *podState) {
		p.stopWaitingLocked(key, s)
		*s = podState{}
	})
}

// Len is the number of pods with an entry.
func (p *pods) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byKey)
}

// prune drops what has gone back to its default: a last-applied write
// past its window, and a limiter whose bucket is full (a new one decides
// alike). The table keeps the room of its peak otherwise, so it is
// rebuilt.
func (p *pods) prune(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.byKey {
		if s.wrote != nil && now.Sub(s.wrote.at) >= lastAppliedWindow {
			s.wrote = nil
		}
		if s.limiter != nil && s.limiter.TokensAt(now) >= float64(s.limiter.Burst()) {
			s.limiter = nil
		}
	}
	p.byKey = keepWhere(p.byKey, func(s *podState) bool { return !s.empty() })
}

// Records just written.

// noteLastApplied remembers the last-applied annotations with hash a
// reconcile has just put on the pod.
func (p *pods) noteLastApplied(key string, uid types.UID, hash string, now time.Time) {
	if hash == "" {
		return
	}
	p.update(key, func(s *podState) { s.wrote = &lastAppliedWrite{uid: uid, hash: hash, at: now} })
}

// lastAppliedWait says how long a reconcile of the cached pod, planning
// last-applied annotations with hash, should wait for the cache to show
// the ones an earlier reconcile has just put on it (lastapplied.go).
func (p *pods) lastAppliedWait(key string, pod *corev1.Pod, hash string, now time.Time) (wait time.Duration) {
	p.update(key, func(s *podState) {
		if s.wrote == nil {
			return
		}
		var over bool
		wait, over = s.wrote.wait(pod, hash, now)
		if over {
			s.wrote = nil
		}
	})
	return wait
}

// Rate limits.

// reserve takes a token of the pod's write limiter (made with qps and
// burst if it has none) and returns how long to wait, 0 if the write may
// go ahead; a write that must wait takes no token.
func (p *pods) reserve(key string, qps float64, burst int, now time.Time) (wait time.Duration) {
	p.update(key, func(s *podState) {
		if s.limiter == nil {
			s.limiter = rate.NewLimiter(rate.Limit(qps), burst)
		}
		res := s.limiter.ReserveN(now, 1)
		if wait = res.DelayFrom(now); wait > 0 {
			res.CancelAt(now)
		}
	})
	return wait
}

// Warnings.

// firstWarning reports whether this warning differs from the pod's last
// one, and remembers it.
func (p *pods) firstWarning(key, uid, reason, message string) (first bool) {
	sum := warningHash(uid, reason, message)
	p.update(key, func(s *podState) {
		first = s.warned != sum
		s.warned = sum
	})
	return first
}

// clearWarning forgets the pod's last warning: the same refusal after
// another outcome is reported again.
func (p *pods) clearWarning(key string) {
	p.update(key, func(s *podState) { s.warned = 0 })
}

func warningHash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, s := range parts {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return max(h.Sum64(), 1) // 0 is "no warning"
}

// Conflicts.

// waitOn records that the pod, refused as Conflict, waits on eni (and on
// no other ENI). A pod in Conflict has no record, so nothing else would
// look at it again when the ENI's other owner goes.
func (p *pods) waitOn(key, eni string) {
	p.update(key, func(s *podState) {
		if s.waitingOn == eni {
			return
		}
		p.stopWaitingLocked(key, s)
		s.waitingOn = eni
		if p.waitingOn[eni] == nil {
			p.waitingOn[eni] = map[string]struct{}{}
		}
		p.waitingOn[eni][key] = struct{}{}
	})
}

// stopWaiting forgets that the pod waits (it got another outcome).
func (p *pods) stopWaiting(key string) {
	p.update(key, func(s *podState) { p.stopWaitingLocked(key, s) })
}

func (p *pods) stopWaitingLocked(key string, s *podState) {
	if s.waitingOn == "" {
		return
	}
	delete(p.waitingOn[s.waitingOn], key)
	if len(p.waitingOn[s.waitingOn]) == 0 {
		delete(p.waitingOn, s.waitingOn)
	}
	s.waitingOn = ""
}

// release returns the pods waiting on eni and forgets that they wait:
// each is reconciled again and waits anew if the ENI is still not its to
// tag.
func (p *pods) release(eni string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.waitingOn[eni]))
	for key := range p.waitingOn[eni] {
		keys = append(keys, key)
	}
	for _, key := range keys {
		p.updateLocked(key, func(s *podState) { p.stopWaitingLocked(key, s) })
	}
	return keys
}

// waiting returns every pod waiting on an ENI.
func (p *pods) waiting() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []string
	for _, byKey := range p.waitingOn {
		for key := range byKey {
			keys = append(keys, key)
		}
	}
	return keys
}
