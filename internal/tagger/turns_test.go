package tagger

import (
	"testing"
	"time"
)

// Two writes per conclusion at --kube-api-qps 100 and burst 200: 100
// conclusions at once, then 50 a second. Pods whose turn is within a
// second conclude at once; the next ones are told to come back at their
// turn, 20 ms apart.
func TestTurnsSpreadConclusionsAtTheBudget(t *testing.T) {
	tr := newTurns(100, 200)
	now := time.Unix(1e9, 0)
	at := 0
	for ; tr.wait(now) == 0; at++ {
		if at > 1000 {
			t.Fatal("every conclusion told to go at once")
		}
	}
	if at != 150 {
		t.Errorf("%d conclusions go at once, want 150 (the burst and the next second's 50)", at)
	}
	prev := time.Duration(0)
	for i := range 10 {
		d := tr.wait(now)
		if d <= turnSlack || (i > 0 && d-prev != 20*time.Millisecond) {
			t.Fatalf("turn %d: wait %v after %v; want past %v, 20 ms after the one before", i, d, prev, turnSlack)
		}
		prev = d
	}
	// Time passes: the budget refills and turns come at once again.
	if d := tr.wait(now.Add(time.Minute)); d != 0 {
		t.Errorf("a minute later a conclusion waits %v", d)
	}
	if d := newTurns(0, 0).wait(now); d != 0 {
		t.Errorf("unpaced turns wait %v", d)
	}
}
