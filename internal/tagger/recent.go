package tagger

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// recentWindow is how long a reconcile waits for the cache to show a
// record this process has just written before it writes the record
// itself: the watch usually delivers the write in milliseconds.
const recentWindow = 5 * time.Second

// recentRecords remembers the records the writer has just written on
// pods (the controller "expectations" of the ReplicaSet controller). A
// reconcile that runs on a cached pod the watch has not updated yet finds
// the tags on the ENI and the record in the ledger, but not the record on
// the pod, and would patch the same annotations and apply the same
// condition again: one write in 200 was repeated so in a burst.
type recentRecords struct {
	mu    sync.Mutex
	byKey map[string]recentRecord
}

type recentRecord struct {
	uid  types.UID
	hash string
	at   time.Time
}

func (r *recentRecords) note(key string, uid types.UID, hash string, now time.Time) {
	if hash == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]recentRecord{}
	}
	r.byKey[key] = recentRecord{uid: uid, hash: hash, at: now}
}

// wait says how long a reconcile of the cached pod should wait for the
// cache to show the record with hash that the writer wrote: 0 when none
// was written recently, another record is due, or the cache shows it.
func (r *recentRecords) wait(key string, pod *corev1.Pod, hash string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byKey[key]
	if !ok {
		return 0
	}
	age := now.Sub(e.at)
	if e.uid != pod.UID || age >= recentWindow || shows(pod, e.hash) {
		delete(r.byKey, key)
		return 0
	}
	if e.hash != hash {
		return 0
	}
	return recentWindow - age
}

func (r *recentRecords) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byKey, key)
}

// shows reports whether the pod carries the record with hash: its
// last-applied hash and a condition naming it.
func shows(pod *corev1.Pod, hash string) bool {
	if pod.Annotations[LastAppliedHashAnnotation] != hash {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && strings.Contains(c.Message, hash) {
			return true
		}
	}
	return false
}

// prune drops the entries older than recentWindow: wait would drop each
// anyway, but only if the pod is reconciled again, and the writer's own
// record does not bring it back (the predicate ignores it).
func (r *recentRecords) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey = keepWhere(r.byKey, func(e recentRecord) bool { return now.Sub(e.at) < recentWindow })
}
