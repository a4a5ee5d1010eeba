package tagger_test

import (
	"testing"
)

// Pods on ENIs nobody has seen yet (the VPC resource controller created
// them just before; no inventory) are looked up, and their lookups share
// describes: the reconcile workers hand them off rather than wait for
// them, so one batch gathers every pod that arrives together, however few
// the workers, and sends a describe per 199 addresses at once. The tag
// writes they lead to come back together too: one CreateTags per tag set.
func TestNewENIsCostADescribePer199PodsAndACreateTagsPerTagSet(t *testing.T) {
	const n, groups = 300, 3
	h := newHarness(t, branchWorld(n))
	// The pods exist before the tagger starts: its first list brings
	// them at once, so how many share a batch does not depend on how
	// fast this test creates them.
	h.pods(n, groups)
	o := h.options() // no inventory: every ENI is found by a lookup
	// Ten workers for 300 lookups: a worker waiting for its lookup's
	// batch would cap the batch at ten addresses (30 describes).
	o.MaxConcurrentReconciles = 10
	h.startManager(o)
	h.waitSynced(n)
	calls := h.calls()
	t.Logf("%d pods on new ENIs, %d tag sets: %v", n, groups, calls)
	if got, want := calls["DescribeNetworkInterfaces"], (n+198)/199; got != want {
		t.Errorf("%d DescribeNetworkInterfaces, want %d (one per 199 addresses)", got, want)
	}
	if got := calls["CreateTags"]; got != groups {
		t.Errorf("%d CreateTags, want %d (one per tag set)", got, groups)
	}
	if len(calls) != 2 {
		t.Errorf("calls %v, want only DescribeNetworkInterfaces and CreateTags", calls)
	}
}
