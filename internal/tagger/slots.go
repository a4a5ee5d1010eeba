package tagger

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// slots bounds the reconciles doing work other than waiting
// (--max-concurrent-reconciles). A reconcile gives its slot back while it
// waits on a batched EC2 call or the Kubernetes API's budget: a batch
// then gathers every pod waiting at once, however few the slots (the
// controller has maxInFlight workers).
type slots = *semaphore.Weighted

func newSlots(n int) slots { return semaphore.NewWeighted(int64(n)) }

// slot is one reconcile's hold on a slot.
type slot struct {
	of   slots
	held bool
}

func (s *slot) take(ctx context.Context) error {
	if err := s.of.Acquire(ctx, 1); err != nil {
		return err
	}
	s.held = true
	return nil
}

func (s *slot) give() {
	if s.held {
		s.of.Release(1)
		s.held = false
	}
}

// waitOnEC2 runs an EC2 call without the slot, and takes it back after.
func (s *slot) waitOnEC2(ctx context.Context, call func() error) error {
	s.give()
	err := call()
	if terr := s.take(ctx); terr != nil && err == nil {
		err = terr
	}
	return err
}
