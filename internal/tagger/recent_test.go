package tagger

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRecentRecordsWait(t *testing.T) {
	now := time.Now()
	stale := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	caughtUp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{LastAppliedHashAnnotation: "h1"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: ConditionType, Message: "2 tags in sync on ENI eni-1 (hash h1)"}}}}
	annotationsOnly := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Annotations: map[string]string{LastAppliedHashAnnotation: "h1"}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u2"}}
	for _, c := range []struct {
		name  string
		noted bool
		pod   *corev1.Pod
		hash  string
		after time.Duration
		want  time.Duration
	}{
		{"nothing written recently", false, stale, "h1", 0, 0},
		{"cache behind the write", true, stale, "h1", time.Second, recentWindow - time.Second},
		{"cache shows the annotations, not yet the condition", true, annotationsOnly, "h1", time.Second, recentWindow - time.Second},
		{"cache caught up", true, caughtUp, "h1", time.Second, 0},
		{"another record is due", true, stale, "h2", time.Second, 0},
		{"a new pod of the same name", true, other, "h1", time.Second, 0},
		{"the window passed", true, stale, "h1", recentWindow, 0},
	} {
		var r recentRecords
		if c.noted {
			r.note("ns/p", "u1", "h1", now)
		}
		if got := r.wait("ns/p", c.pod, c.hash, now.Add(c.after)); got != c.want {
			t.Errorf("%s: wait %v, want %v", c.name, got, c.want)
		}
	}
}
