package tagger

import (
	"slices"
	"testing"
)

func TestWaitingReleasesThePodsOfOneENI(t *testing.T) {
	var w waiting
	w.wait("ns/a", "eni-1")
	w.wait("ns/b", "eni-1")
	w.wait("ns/c", "eni-2")
	w.wait("ns/c", "eni-1") // its IP moved: it waits on one ENI only
	w.stop("ns/b")
	got := w.release("eni-1")
	slices.Sort(got)
	if !slices.Equal(got, []string{"ns/a", "ns/c"}) {
		t.Fatalf("released %v", got)
	}
	if got := w.release("eni-2"); len(got) != 0 {
		t.Fatalf("eni-2 released %v after its pod moved", got)
	}
	if got := w.pods(); len(got) != 0 || len(w.byENI) != 0 {
		t.Fatalf("left behind: %v, %v", got, w.byENI)
	}
	w.stop("ns/never") // no entry: nothing to do
}
