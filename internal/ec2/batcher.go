package ec2

import (
	"context"
	"sync"
	"time"
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
	// limiter; a due batch stays open that long and keeps taking items,
	// so under a rate limit batches grow instead of queueing.
	gate func() time.Duration

	mu      sync.Mutex
	pending map[K]*pendingBatch[I, O]
}

// noKey is the key of a batcher whose items all share one call.
type noKey struct{}

type outcome[O any] struct {
	value O
	err   error
}

type pendingBatch[I comparable, O any] struct {
	items   []I
	waiters map[I][]chan outcome[O]
	idle    *time.Timer
	max     *time.Timer
}

// do adds item to the pending batch for key and waits for its result.
func (b *batcher[K, I, O]) do(ctx context.Context, key K, item I) (O, error) {
	ch := make(chan outcome[O], 1)
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[K]*pendingBatch[I, O]{}
	}
	p := b.pending[key]
	if p == nil {
		p = &pendingBatch[I, O]{waiters: map[I][]chan outcome[O]{}}
		b.pending[key] = p
		p.max = time.AfterFunc(b.maxWait, func() { b.flush(key, p) })
	}
	if _, dup := p.waiters[item]; !dup {
		p.items = append(p.items, item)
	}
	p.waiters[item] = append(p.waiters[item], ch)
	if len(p.items) >= b.maxItems {
		b.detach(key, p)
		b.mu.Unlock()
		go b.exec(key, p)
	} else {
		if p.idle != nil {
			p.idle.Stop()
		}
		p.idle = time.AfterFunc(b.idle, func() { b.flush(key, p) })
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
	if b.pending[key] != p {
		b.mu.Unlock()
		return // already sent
	}
	if b.gate != nil {
		if d := b.gate(); d > 0 {
			if p.idle != nil {
				p.idle.Stop()
			}
			p.max.Stop()
			p.idle = time.AfterFunc(d, func() { b.flush(key, p) })
			b.mu.Unlock()
			return
		}
	}
	b.detach(key, p)
	b.mu.Unlock()
	b.exec(key, p)
}

func (b *batcher[K, I, O]) exec(key K, p *pendingBatch[I, O]) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	b.call(ctx, key, p.items, p.waiters)
}

func (b *batcher[K, I, O]) call(ctx context.Context, key K, items []I, waiters map[I][]chan outcome[O]) {
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
		var o outcome[O]
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
