package tagger

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every path through a pod's life leaves no entry behind once what it
// held is over: the table's one rule for when an entry goes.
func TestPodEntriesGoWhenNothingIsLeftInThem(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		life func(p *pods)
	}{
		{"a warning, then another outcome", func(p *pods) {
			p.firstWarning("ns/p", "u", "InvalidTags", "bad")
			p.clearWarning("ns/p")
		}},
		{"a conflict, then its ENI released", func(p *pods) {
			p.waitOn("ns/p", "eni-1")
			p.release("eni-1")
		}},
		{"a conflict, then another outcome", func(p *pods) {
			p.waitOn("ns/p", "eni-1")
			p.stopWaiting("ns/p")
		}},
		{"a record the cache then shows", func(p *pods) {
			p.noteLastApplied("ns/p", "u", "h1", now)
			shown := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Annotations: map[string]string{LastAppliedHashAnnotation: "h1"}},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: ConditionType, Message: "in sync (hash h1)"}}}}
			p.lastAppliedWait("ns/p", shown, "h1", now)
		}},
		{"a limiter whose bucket refilled, pruned", func(p *pods) {
			p.reserve("ns/p", 1, 1, now)
			p.prune(now.Add(time.Second))
		}},
		{"everything at once, then the pod forgotten", func(p *pods) {
			p.firstWarning("ns/p", "u", "AWSError", "throttled")
			p.waitOn("ns/p", "eni-1")
			p.reserve("ns/p", 1, 1, now)
			p.noteLastApplied("ns/p", "u", "h1", now)
			p.forget("ns/p")
		}},
	} {
		p := newPods()
		c.life(p)
		if n := p.Len(); n != 0 || len(p.waitingOn) != 0 {
			t.Errorf("%s: %d entries and %d ENIs waited on left", c.name, n, len(p.waitingOn))
		}
	}
}

// A limiter is dropped only once its bucket is full again (a new one
// would decide alike); a just-recorded entry once its window is over.
func TestPruneDropsOnlyWhatWentBackToItsDefault(t *testing.T) {
	p := newPods()
	now := time.Now()
	if d := p.reserve("ns/a", 1, 2, now); d != 0 {
		t.Fatalf("first write of ns/a waits %s", d)
	}
	p.prune(now)
	if p.Len() != 1 {
		t.Fatal("a limiter with a token spent was dropped: the pod's next write would get a full burst again")
	}
	p.prune(now.Add(2 * time.Second)) // 1 token/s refills it
	if n := p.Len(); n != 0 {
		t.Fatalf("%d entries left with full buckets", n)
	}

	p.noteLastApplied("ns/a", "u1", "h1", now)
	p.noteLastApplied("ns/b", "u2", "h2", now.Add(lastAppliedWindow))
	p.prune(now.Add(lastAppliedWindow))
	if _, ok := p.byKey["ns/a"]; ok {
		t.Fatal("an entry past its window was kept")
	}
	if _, ok := p.byKey["ns/b"]; !ok {
		t.Fatal("an entry within its window was dropped")
	}
}

// A burst of writes waits for the limiter, and a write told to wait
// takes no token.
func TestReserveAppliesTheRateLimit(t *testing.T) {
	p := newPods()
	now := time.Now()
	if d := p.reserve("ns/a", 1, 1, now); d != 0 {
		t.Fatalf("first write waits %s", d)
	}
	for range 3 {
		if d := p.reserve("ns/a", 1, 1, now); d <= 0 || d > time.Second {
			t.Fatalf("second write at once waits %s, want up to 1s", d)
		}
	}
	if d := p.reserve("ns/a", 1, 1, now.Add(time.Second)); d != 0 {
		t.Fatalf("a write after the refill waits %s: a refused write took a token", d)
	}
}

func TestWaitingReleasesThePodsOfOneENI(t *testing.T) {
	p := newPods()
	p.waitOn("ns/a", "eni-1")
	p.waitOn("ns/b", "eni-1")
	p.waitOn("ns/c", "eni-2")
	p.waitOn("ns/c", "eni-1") // its IP moved: it waits on one ENI only
	p.stopWaiting("ns/b")
	got := p.release("eni-1")
	slices.Sort(got)
	if !slices.Equal(got, []string{"ns/a", "ns/c"}) {
		t.Fatalf("released %v", got)
	}
	if got := p.release("eni-2"); len(got) != 0 {
		t.Fatalf("eni-2 released %v after its pod moved", got)
	}
	if got := p.waiting(); len(got) != 0 || p.Len() != 0 {
		t.Fatalf("left behind: %v, %d entries", got, p.Len())
	}
	p.stopWaiting("ns/never") // no entry: nothing to do
	if p.Len() != 0 {
		t.Fatal("stopWaiting made an entry")
	}
}

// The same refusal is one warning; another outcome in between makes it
// new again; a new pod of the same name is warned anew.
func TestFirstWarning(t *testing.T) {
	p := newPods()
	if !p.firstWarning("ns/a", "u1", "InvalidTags", "bad") {
		t.Fatal("a first warning was not first")
	}
	if p.firstWarning("ns/a", "u1", "InvalidTags", "bad") {
		t.Fatal("a repeated warning was first")
	}
	if !p.firstWarning("ns/a", "u2", "InvalidTags", "bad") {
		t.Fatal("a new pod's warning was not first")
	}
	p.clearWarning("ns/a")
	if !p.firstWarning("ns/a", "u2", "InvalidTags", "bad") {
		t.Fatal("a warning after another outcome was not first")
	}
}

func TestLastAppliedWait(t *testing.T) {
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
		{"cache behind the write", true, stale, "h1", time.Second, lastAppliedWindow - time.Second},
		{"cache shows the annotations, not yet the condition", true, annotationsOnly, "h1", time.Second, lastAppliedWindow - time.Second},
		{"cache caught up", true, caughtUp, "h1", time.Second, 0},
		{"another record is due", true, stale, "h2", time.Second, 0},
		{"a new pod of the same name", true, other, "h1", time.Second, 0},
		{"the window passed", true, stale, "h1", lastAppliedWindow, 0},
	} {
		p := newPods()
		if c.noted {
			p.noteLastApplied("ns/p", "u1", "h1", now)
		}
		if got := p.lastAppliedWait("ns/p", c.pod, c.hash, now.Add(c.after)); got != c.want {
			t.Errorf("%s: wait %v, want %v", c.name, got, c.want)
		}
	}
}
