package emulator

import (
	"testing"
	"time"
)

// Overrun finds calls beyond a bucket: a burst larger than its size,
// a rate above its refill, and not calls after a pause that refilled it.
func TestBucketOverrun(t *testing.T) {
	t0 := time.Now()
	at := func(offsets ...time.Duration) []Call {
		var out []Call
		for _, o := range offsets {
			out = append(out, Call{Action: "CreateTags", Time: t0.Add(o)}, Call{Action: "Other", Time: t0.Add(o)})
		}
		return out
	}
	b := Bucket{Size: 2, Refill: 10}
	for _, tc := range []struct {
		name  string
		calls []Call
		bad   bool
	}{
		{"the burst and one of slack", at(0, 0, 0), false},
		{"beyond the burst at once", at(0, 0, 0, 0), true},
		{"at the refill rate", at(0, 0, 100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond), false},
		{"faster than the refill", at(0, 0, 10*time.Millisecond, 20*time.Millisecond, 30*time.Millisecond), true},
		{"full again after a pause", at(0, 0, time.Second, time.Second, time.Second), false},
	} {
		if got := b.Overrun(tc.calls, "CreateTags"); (got != "") != tc.bad {
			t.Errorf("%s: %q, want a violation %v", tc.name, got, tc.bad)
		}
	}
	if got := b.Overrun(at(0, 0), ""); got == "" {
		t.Error("every action counted: 4 calls at once fit a bucket of 2")
	}
}
