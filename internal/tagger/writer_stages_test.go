package tagger

import (
	"context"
	"testing"
)

// A write whose record waits (on the Kubernetes client's budget) does not
// hold its write slot: the next pod's AWS write goes ahead, so ENIs are
// tagged at EC2's pace, not at the pace of the API budget. The pod stays
// busy until its record is made.
func TestWriterRecordsWithoutHoldingAWriteSlot(t *testing.T) {
	wrote := make(chan string, 2)
	recording := make(chan string, 2)
	releaseRecord := make(chan struct{})
	w := newWriter("", 1, 1, newPods(), writerStages{
		write: func(_ context.Context, pw *podWork) error { wrote <- pw.key; return nil },
		conclude: func(_ context.Context, pw *podWork) {
			recording <- pw.key
			<-releaseRecord
		},
		requeue: func(string) {},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx)
	}()
	defer func() { cancel(); close(releaseRecord); <-done }()

	w.submit(&podWork{key: "ns/first"})
	if got := <-wrote; got != "ns/first" {
		t.Fatalf("wrote %s first", got)
	}
	if got := <-recording; got != "ns/first" {
		t.Fatalf("recording %s", got)
	}
	// The one write slot is free while ns/first's record waits.
	w.submit(&podWork{key: "ns/second"})
	if got := <-wrote; got != "ns/second" {
		t.Fatalf("wrote %s second", got)
	}
	if !w.pods.writing("ns/first") {
		t.Fatal("a pod whose record is not made yet is not busy")
	}
}
