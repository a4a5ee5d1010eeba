package ec2

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// batcher coalesces concurrent requests of the same shape (key) into one
// AWS call. A batch goes out when no new item arrived for idle, when maxWait
// passed since its first item, or when it holds maxItems items, whichever
// comes first. Duplicate items in a batch are sent once and answered to
// every caller.
type batcher[K comparable, I comparable, O any] struct {
	idle     time.Duration
	maxWait  time.Duration
	maxItems int
	timeout  time.Duration // for one batch call, detached from any caller
	// run performs the call. An item missing from the result gets the error
	// missing(item).
	run     func(ctx context.Context, key K, items []I) (map[I]O, error)
	missing func(item I) error
	// splittable reports whether a failed batch may succeed in parts (e.g. one
	// bad ID failed the whole call); such a batch is retried in halves.
	splittable func(error) bool
	// observe is told the size of every call made.
	observe func(size int)
	// gate, when set, says how long a call would wait for the rate
	// limiter; a due batch the limiter would hold stays open and keeps
	// taking items until its turn, so under a rate limit batches grow
	// instead of queueing. take (set with gate) waits for the limiter's
	// token for a batch's call; the call's first attempt then spends it
	// instead of waiting again (withPrepaidToken).
	gate func() time.Duration
	take func(context.Context) error
	// pace, when set, is the refill rate (calls a second) of the bucket
	// the batches' calls share. A new batch then stays open at least as
	// long as the open batches take to get one call each at that rate:
	// under a sustained load of many keys the calls go at the rate the
	// bucket refills, from the start, instead of draining its burst
	// first (fast for the first pods) and then queueing for the refill
	// (each key waiting its turn: the same wait, now for everyone). The
	// burst is kept for spikes, and for the account's other clients.
	pace func() float64
	// clock runs the batch windows; nil: the real clock.
	clock clock.WithDelayedExecution

	mu      sync.Mutex
	pending map[K]*pendingBatch[I, O]
	// due are the batches held by the limiter, oldest first. One drainer
	// hands them its tokens in that order: with a timer per batch racing
	// for each token, one tag set waited 7-10 s while 20 shared ten
	// calls a second (a fair turn is 2 s), and that was the burst's tail.
	due      []dueBatch[K, I, O]
	draining bool
}

type dueBatch[K comparable, I comparable, O any] struct {
	key K
	p   *pendingBatch[I, O]
}

// noKey is the key of a batcher whose items all share one call.
type noKey struct{}

type batchAnswer[O any] struct {
	value O
	err   error
}

type pendingBatch[I comparable, O any] struct {
	items   []I
	waiters map[I][]chan batchAnswer[O]
	idle    clock.Timer
	max     clock.Timer
	due     bool // waiting in batcher.due for the limiter
}

// do adds item to the pending batch for key and waits for its result.
func (b *batcher[K, I, O]) do(ctx context.Context, key K, item I) (O, error) {
	ch := make(chan batchAnswer[O], 1)
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[K]*pendingBatch[I, O]{}
	}
	p := b.pending[key]
	if p == nil {
		p = &pendingBatch[I, O]{waiters: map[I][]chan batchAnswer[O]{}}
		b.pending[key] = p
		p.max = b.afterFunc(b.windowLocked(), func() { b.flush(key, p) })
	}
	if _, dup := p.waiters[item]; !dup {
		p.items = append(p.items, item)
	}
	p.waiters[item] = append(p.waiters[item], ch)
	if len(p.items) >= b.maxItems {
		b.detach(key, p)
		b.mu.Unlock()
		go b.exec(key, p, false)
	} else if !p.due {
		if p.idle != nil {
			p.idle.Stop()
		}
		p.idle = b.afterFunc(b.idle, func() { b.flush(key, p) })
		b.mu.Unlock()
	} else {
		b.mu.Unlock()
	}
	select {
	case o := <-ch:
		return o.value, o.err
	case <-ctx.Done():
		var zero O
		return zero, ctx.Err()
	}
}

// afterFunc runs f after d on the batcher's clock, in a goroutine of its
// own: a fake clock calls back under its lock, which flush's Stop takes.
func (b *batcher[K, I, O]) afterFunc(d time.Duration, f func()) clock.Timer {
	if b.clock == nil {
		return clock.RealClock{}.AfterFunc(d, f)
	}
	return b.clock.AfterFunc(d, func() { go f() })
}

// windowLocked is the longest a new batch stays open: maxWait, or with
// a pace, the time the open batches (this one included) take to get a
// call each; b.mu must be held.
func (b *batcher[K, I, O]) windowLocked() time.Duration {
	if b.pace == nil {
		return b.maxWait
	}
	r := b.pace()
	if r <= 0 {
		return b.maxWait
	}
	return max(b.maxWait, time.Duration(float64(len(b.pending))/r*float64(time.Second)))
}

// detach removes p from the pending set; b.mu must be held.
func (b *batcher[K, I, O]) detach(key K, p *pendingBatch[I, O]) {
	delete(b.pending, key)
	p.max.Stop()
	if p.idle != nil {
		p.idle.Stop()
	}
}

func (b *batcher[K, I, O]) flush(key K, p *pendingBatch[I, O]) {
	b.mu.Lock()
	if b.pending[key] != p || p.due {
		b.mu.Unlock()
		return // already sent, or waiting for its turn
	}
	if b.gate != nil && (len(b.due) > 0 || b.gate() > 0) {
		p.due = true
		p.max.Stop()
		if p.idle != nil {
			p.idle.Stop()
		}
		b.due = append(b.due, dueBatch[K, I, O]{key, p})
		if !b.draining {
			b.draining = true
			go b.drain()
		}
		b.mu.Unlock()
		return
	}
	b.detach(key, p)
	b.mu.Unlock()
	b.exec(key, p, false)
}

// drain hands the limiter's tokens to the due batches, oldest first, and
// ends when none is left. A batch that filled up meanwhile has left on
// its own (and waits for its token in the call).
func (b *batcher[K, I, O]) drain() {
	for {
		b.mu.Lock()
		if !b.dropLeftLocked() {
			b.draining = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		err := b.take(ctx)
		cancel()
		b.mu.Lock()
		if !b.dropLeftLocked() {
			b.mu.Unlock()
			continue // the token's batch left full meanwhile
		}
		next := b.due[0]
		b.due = b.due[1:]
		b.detach(next.key, next.p)
		b.mu.Unlock()
		// Without the token (take failed), the call waits for its own.
		go b.exec(next.key, next.p, err == nil)
	}
}

// dropLeftLocked drops the due batches that left full on their own and
// says whether one is still waiting.
func (b *batcher[K, I, O]) dropLeftLocked() bool {
	for len(b.due) > 0 && b.pending[b.due[0].key] != b.due[0].p {
		b.due = b.due[1:]
	}
	return len(b.due) > 0
}

func (b *batcher[K, I, O]) exec(key K, p *pendingBatch[I, O], prepaid bool) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	if prepaid {
		ctx = withPrepaidToken(ctx)
	}
	b.call(ctx, key, p.items, p.waiters)
}

func (b *batcher[K, I, O]) call(ctx context.Context, key K, items []I, waiters map[I][]chan batchAnswer[O]) {
	if b.observe != nil {
		b.observe(len(items))
	}
	results, err := b.run(ctx, key, items)
	if err != nil && len(items) > 1 && b.splittable != nil && b.splittable(err) {
		half := len(items) / 2
		b.call(ctx, key, items[:half], waiters)
		b.call(ctx, key, items[half:], waiters)
		return
	}
	for _, item := range items {
		var o batchAnswer[O]
		switch v, ok := results[item]; {
		case err != nil:
			o.err = err
		case ok:
			o.value = v
		default:
			o.err = b.missing(item)
		}
		for _, ch := range waiters[item] {
			ch <- o
		}
	}
}
