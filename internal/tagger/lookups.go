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
// batch could never hold more pods than there are workers. A lookup's
// result is kept in the pod's entry for its next reconcile, which it asks
// for; lookups itself keeps no per-pod state.
type lookups struct {
	pods    *pods
	lookup  func(context.Context, string) (ec2.ENI, error)
	requeue func(key string)

	mu sync.Mutex
	// ctx is Start's; before Start and once it ends (stopped), lookups
	// are made in the reconcile.
	ctx     context.Context
	stopped bool
	wg      sync.WaitGroup
}

type lookupResult struct {
	ip  string
	eni ec2.ENI
	err error
}

func newLookups(pods *pods, lookup func(context.Context, string) (ec2.ENI, error), requeue func(string)) *lookups {
	return &lookups{pods: pods, lookup: lookup, requeue: requeue}
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
	if res, found, running := l.pods.takeLookup(key, ip); found {
		return res.eni, res.err
	} else if running {
		return ec2.ENI{}, errLookupPending
	}
	l.mu.Lock()
	base := l.ctx
	if base == nil || l.stopped {
		l.mu.Unlock()
		return l.lookup(ctx, ip)
	}
	l.wg.Add(1)
	l.mu.Unlock()
	l.pods.startLookup(key, ip)
	go func() {
		defer l.wg.Done()
		lctx, cancel := context.WithTimeout(base, lookupTimeout)
		e, err := l.lookup(lctx, ip)
		cancel()
		l.pods.endLookup(key, lookupResult{ip: ip, eni: e, err: err})
		l.requeue(key)
	}()
	return ec2.ENI{}, errLookupPending
}
