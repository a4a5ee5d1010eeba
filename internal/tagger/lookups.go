package tagger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// lookupTimeout bounds one pod's lookup (its batch's wait included).
const lookupTimeout = 2 * time.Minute

// errLookupPending ends a reconcile whose pod's ENI is being looked up:
// the lookup's end brings the pod back.
var errLookupPending = errors.New("the pod's ENI is being looked up")

// lookups runs the pods' ENI lookups off the reconcile workers. A lookup
// waits for its batch (one DescribeNetworkInterfaces serves up to the
// batch's size of pods), and a batch holds only the lookups waiting at
// once: were the workers (--max-concurrent-reconciles) to wait for it, a
// batch could never hold more pods than there are workers, and a burst of
// new ENIs would cost a describe per handful of pods. A started lookup
// ends in a result kept for the pod's next reconcile, which it asks for.
type lookups struct {
	lookup  func(context.Context, string) (ec2.ENI, error)
	requeue func(key string)

	mu sync.Mutex
	// ctx is Start's; before Start and once it ends (stopped), lookups
	// are made in the reconcile.
	ctx     context.Context
	stopped bool
	// running are the addresses being looked up, by pod key; done the
	// results not yet taken.
	running map[string]string
	done    map[string]lookupResult
	wg      sync.WaitGroup
}

type lookupResult struct {
	ip  string
	eni ec2.ENI
	err error
}

func newLookups(lookup func(context.Context, string) (ec2.ENI, error), requeue func(string)) *lookups {
	return &lookups{lookup: lookup, requeue: requeue, running: map[string]string{}, done: map[string]lookupResult{}}
}

// Start lets lookups run off the reconcile until ctx ends (a
// manager.Runnable).
func (l *lookups) Start(ctx context.Context) error {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	l.stopped = true // no lookup starts after this: wg.Wait sees them all
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}

// get returns the ENI holding ip for the pod key: the result of the
// pod's finished lookup of ip, or errLookupPending while one runs (one
// is started if none does). Before Start it looks up in place.
func (l *lookups) get(ctx context.Context, key, ip string) (ec2.ENI, error) {
	l.mu.Lock()
	if res, ok := l.done[key]; ok {
		l.done = without(l.done, key)
		if res.ip == ip {
			l.mu.Unlock()
			return res.eni, res.err
		}
	}
	if _, ok := l.running[key]; ok {
		l.mu.Unlock()
		return ec2.ENI{}, errLookupPending
	}
	base := l.ctx
	if base == nil || l.stopped {
		l.mu.Unlock()
		return l.lookup(ctx, ip)
	}
	l.running[key] = ip
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		lctx, cancel := context.WithTimeout(base, lookupTimeout)
		e, err := l.lookup(lctx, ip)
		cancel()
		l.mu.Lock()
		l.running = without(l.running, key)
		l.done[key] = lookupResult{ip: ip, eni: e, err: err}
		l.mu.Unlock()
		l.requeue(key)
	}()
	return ec2.ENI{}, errLookupPending
}

// forget drops a pod's result not taken (the pod is gone).
func (l *lookups) forget(key string) {
	l.mu.Lock()
	l.done = without(l.done, key)
	l.mu.Unlock()
}
