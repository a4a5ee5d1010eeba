package tagger

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// lastAppliedWindow is how long a reconcile waits for the cache to show
// last-applied annotations this process has just written before it writes
// them itself: the watch usually delivers the write in milliseconds.
const lastAppliedWindow = 5 * time.Second

// lastAppliedWrite is the last-applied annotations a reconcile has just
// put on a pod (the ReplicaSet controller's "expectations"). A reconcile
// of a cached pod the watch has not updated yet finds the tags on the ENI
// and the record in the ledger, but not the annotations, and would patch
// them and apply the same condition again.
type lastAppliedWrite struct {
	uid  types.UID
	hash string
	at   time.Time
}

// wait says how long a reconcile of the cached pod, planning annotations
// with hash, should wait for the cache to show these: 0 when others are
// due or the cache shows them. over tells that the entry has served (a
// new pod, its window passed, or the cache caught up).
func (e lastAppliedWrite) wait(pod *corev1.Pod, hash string, now time.Time) (wait time.Duration, over bool) {
	age := now.Sub(e.at)
	if e.uid != pod.UID || age >= lastAppliedWindow || shows(pod, e.hash) {
		return 0, true
	}
	if e.hash != hash {
		return 0, false
	}
	return lastAppliedWindow - age, false
}

// shows reports whether the pod carries the outcome with hash: its
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
