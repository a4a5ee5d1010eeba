package tagger

import (
	"context"
	"sync"
	"testing"
)

// With one slot, every reconcile still waits on EC2 at once (so their
// calls share a batch), and only one does anything else at a time.
func TestSlotsAreGivenBackWhileWaitingOnEC2(t *testing.T) {
	const n = 5
	of := newSlots(1)
	var waiting sync.WaitGroup
	waiting.Add(n)
	answer := make(chan struct{})
	var mu sync.Mutex
	busy, most := 0, 0
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			s := &slot{of: of}
			if err := s.take(context.Background()); err != nil {
				t.Error(err)
				return
			}
			defer s.give()
			_ = s.waitOnEC2(context.Background(), func() error {
				waiting.Done()
				<-answer // the batch goes out only when all n wait
				return nil
			})
			mu.Lock()
			busy++
			most = max(most, busy)
			mu.Unlock()
			mu.Lock()
			busy--
			mu.Unlock()
		}()
	}
	waiting.Wait()
	close(answer)
	done.Wait()
	if most != 1 {
		t.Errorf("%d reconciles held a slot at once, want 1", most)
	}
	if !of.TryAcquire(1) {
		t.Error("a slot is still held")
	}
}

// A reconcile whose context ends while it waits gives nothing back twice.
func TestSlotTakenBackFailsWithTheContext(t *testing.T) {
	of := newSlots(1)
	s := &slot{of: of}
	if err := s.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := s.waitOnEC2(ctx, func() error {
		if !of.TryAcquire(1) { // another reconcile takes the slot meanwhile
			t.Error("the slot was not given back while waiting")
		}
		cancel()
		return nil
	})
	if err == nil {
		t.Fatal("no error when the slot could not be taken back")
	}
	s.give()
	if of.TryAcquire(1) {
		t.Fatal("the other reconcile's slot was given back for it")
	}
}
