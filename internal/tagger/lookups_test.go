package tagger

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// A pod's lookup runs once however often the pod is reconciled while it
// runs; its end requeues the pod, whose next reconcile takes the result
// (once: a later one, or one for another address, looks up again). Before
// the stage starts, and after it stops, the lookup is made in place.
func TestLookupsRunOncePerPodAndHandTheResultToTheNextReconcile(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	requeued := make(chan string, 4)
	l := newLookups(newPods(), func(_ context.Context, ip string) (ec2.ENI, error) {
		calls.Add(1)
		<-release
		return ec2.ENI{ID: "eni-" + ip, PrimaryIP: ip}, nil
	}, func(key string) { requeued <- key })

	close(release) // not started: in place
	if e, err := l.get(context.Background(), "ns/a", "10.0.0.1"); err != nil || e.ID != "eni-10.0.0.1" {
		t.Fatalf("before Start: %v, %v; want the ENI at once", e.ID, err)
	}
	release = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = l.Start(ctx); close(stopped) }()
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.ctx != nil })

	calls.Store(0)
	for range 3 {
		if _, err := l.get(context.Background(), "ns/a", "10.0.0.1"); !errors.Is(err, errLookupPending) {
			t.Fatalf("while the lookup runs: %v, want errLookupPending", err)
		}
	}
	close(release)
	if key := <-requeued; key != "ns/a" {
		t.Fatalf("requeued %q, want ns/a", key)
	}
	if e, err := l.get(context.Background(), "ns/a", "10.0.0.1"); err != nil || e.ID != "eni-10.0.0.1" {
		t.Fatalf("after the lookup: %v, %v; want its ENI", e.ID, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d lookups for one pod reconciled 4 times, want 1", n)
	}
	// The result was taken: the next reconcile looks up again.
	if _, err := l.get(context.Background(), "ns/a", "10.0.0.1"); !errors.Is(err, errLookupPending) {
		t.Fatalf("a taken result served twice: %v", err)
	}
	<-requeued
	// A result for an address the pod no longer has is dropped.
	if _, err := l.get(context.Background(), "ns/a", "10.0.0.2"); !errors.Is(err, errLookupPending) {
		t.Fatalf("a result for another address served: %v", err)
	}
	<-requeued
	l.pods.forget("ns/a")
	if n := l.pods.Len(); n != 0 {
		t.Fatalf("forget left %d entries", n)
	}
	cancel()
	<-stopped
	if e, err := l.get(context.Background(), "ns/b", "10.0.0.3"); err != nil || e.ID != "eni-10.0.0.3" {
		t.Fatalf("after Stop: %v, %v; want the ENI at once", e.ID, err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
