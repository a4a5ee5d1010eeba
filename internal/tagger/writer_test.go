package tagger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writerUnderTest runs a writer whose apply blocks until released and
// records the requeues it asks for.
type writerUnderTest struct {
	*writer
	release  chan error
	inFlight atomic.Int32
	peak     atomic.Int32
	mu       sync.Mutex
	requeued []string
}

func startWriter(t *testing.T, maxWrites int) *writerUnderTest {
	t.Helper()
	wt := &writerUnderTest{release: make(chan error)}
	apply := func(ctx context.Context, pw *podWork) error {
		n := wt.inFlight.Add(1)
		defer wt.inFlight.Add(-1)
		for p := wt.peak.Load(); n > p && !wt.peak.CompareAndSwap(p, n); p = wt.peak.Load() {
		}
		select {
		case err := <-wt.release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	requeue := func(key string) {
		wt.mu.Lock()
		defer wt.mu.Unlock()
		wt.requeued = append(wt.requeued, key)
	}
	wt.writer = newWriter("", maxWrites, 1, newPods(), writerStages{write: apply, conclude: func(context.Context, *podWork) {}, requeue: requeue})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wt.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return wt
}

func (wt *writerUnderTest) requeues() []string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]string(nil), wt.requeued...)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Writes run concurrently, so they can share batched calls, up to the
// bound and no further.
func TestWriterBoundsWritesInFlight(t *testing.T) {
	wt := startWriter(t, 3)
	for i := range 5 {
		wt.submit(&podWork{key: fmt.Sprintf("ns/p%d", i)})
	}
	eventually(t, "three writes in flight", func() bool { return wt.inFlight.Load() == 3 })
	time.Sleep(50 * time.Millisecond)
	if n := wt.inFlight.Load(); n != 3 {
		t.Fatalf("%d writes in flight, want the bound, 3", n)
	}
	for range 5 {
		wt.release <- nil
	}
	eventually(t, "every write done", func() bool { return wt.inFlight.Load() == 0 && !wt.pods.writing("ns/p4") })
	if p := wt.peak.Load(); p != 3 {
		t.Fatalf("peak of %d writes in flight, want 3", p)
	}
}

// A pod with a write under way is busy; a reconcile turned away then
// gets the pod requeued when the write ends. A write that succeeds with
// nobody turned away asks for no reconcile: it recorded its outcome.
func TestWriterRequeuesOnlyWhenNeeded(t *testing.T) {
	wt := startWriter(t, 10)
	wt.submit(&podWork{key: "ns/quiet"})
	eventually(t, "the write started", func() bool { return wt.inFlight.Load() == 1 })
	wt.release <- nil
	eventually(t, "the write done", func() bool { return wt.inFlight.Load() == 0 })
	eventually(t, "the pod free", func() bool {
		return wt.pods.Len() == 0
	})
	if got := wt.requeues(); len(got) != 0 {
		t.Fatalf("a recorded write asked for reconciles: %v", got)
	}

	wt.submit(&podWork{key: "ns/visited"})
	eventually(t, "the write started", func() bool { return wt.inFlight.Load() == 1 })
	if !wt.pods.writing("ns/visited") {
		t.Fatal("a pod with a write in flight is not busy")
	}
	wt.release <- nil
	eventually(t, "the requeue", func() bool { return len(wt.requeues()) == 1 })
	if got := wt.requeues(); got[0] != "ns/visited" {
		t.Fatalf("requeued %v, want ns/visited", got)
	}
}

// A failed write is handed, once, to the pod's next reconcile, which is
// asked for.
func TestWriterKeepsAFailureForTheNextReconcile(t *testing.T) {
	wt := startWriter(t, 10)
	wt.submit(&podWork{key: "ns/p"})
	eventually(t, "the write started", func() bool { return wt.inFlight.Load() == 1 })
	wt.release <- errors.New("throttled")
	eventually(t, "the requeue", func() bool { return len(wt.requeues()) == 1 })
	if err := wt.pods.takeWriteError("ns/p"); err == nil || err.Error() != "throttled" {
		t.Fatalf("failure: %v, want throttled", err)
	}
	if err := wt.pods.takeWriteError("ns/p"); err != nil {
		t.Fatalf("a failure handed out twice: %v", err)
	}
}
