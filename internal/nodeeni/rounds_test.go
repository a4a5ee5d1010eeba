package nodeeni_test

import (
	"slices"
	"testing"
)

// A pass over many nodes writes what each round did before going on: the
// NodeENI's ready count climbs node by node (rounds of one node here)
// instead of jumping from 0 to all at the end of the pass, and each
// node's ENINode is there for its agent meanwhile.
func TestRolloutShowsProgressRoundByRound(t *testing.T) {
	h, _ := nodesHarness(t, 3, "rounds")
	o := h.options()
	o.RoundNodes = 1
	h.start(o)
	w := h.watchWrites("rn")
	h.createNodeENI("rn", h.multusSpec(map[string]string{"ng": "rounds"}))
	h.ready("rn", 3)
	seen := w.readyCounts()
	for _, n := range []int32{1, 2} {
		if !slices.Contains(seen, n) {
			t.Errorf("ready counts written %v: %d never shown", seen, n)
		}
	}
	if len(h.attachments("rn")) != 3 {
		t.Errorf("entries %+v", h.attachments("rn"))
	}
}

// readyCounts are the readyNodes of the versions the watch saw, in order.
func (l *writeLog) readyCounts() []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int32
	for _, ne := range l.versions {
		out = append(out, ne.Status.ReadyNodes)
	}
	return out
}
