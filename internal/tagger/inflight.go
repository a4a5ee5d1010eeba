package tagger

import (
	"context"
	"sync"
)

// writesInFlight tracks the tag writes under way, per pod, and the outcome
// of each finished one until the pod's next reconcile takes it.
type writesInFlight struct {
	mu     sync.Mutex
	active map[string]bool
	done   map[string]error
}

func (w *writesInFlight) begin(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active == nil {
		w.active, w.done = map[string]bool{}, map[string]error{}
	}
	w.active[key] = true
	delete(w.done, key)
}

func (w *writesInFlight) end(key string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.active, key)
	w.done[key] = err
}

// running reports whether a write of the pod is under way.
func (w *writesInFlight) running(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[key]
}

// status reports whether a write of the pod finished since the last call
// (and its error), or is still running.
func (w *writesInFlight) status(key string) (wrote bool, err error, running bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active[key] {
		return false, nil, true
	}
	err, wrote = w.done[key]
	delete(w.done, key)
	return wrote && err == nil, err, false
}

// lifetime holds the context of the running manager, so writes started
// by a reconcile end with the manager, not with the reconcile.
type lifetime struct {
	mu  sync.Mutex
	ctx context.Context
}

// Start records the manager's context (a manager.Runnable).
func (l *lifetime) Start(ctx context.Context) error {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	<-ctx.Done()
	return nil
}

// context returns the manager's context, or fallback's values without
// its cancellation before the manager started.
func (l *lifetime) context(fallback context.Context) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx != nil {
		return l.ctx
	}
	return context.WithoutCancel(fallback)
}
