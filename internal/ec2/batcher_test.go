package ec2

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var errBad = errors.New("bad item in batch")

func newTestBatcher(maxItems int, calls *atomic.Int32, sizes *[]int, mu *sync.Mutex) *batcher[string, int, string] {
	return &batcher[string, int, string]{
		idle: 20 * time.Millisecond, maxWait: 200 * time.Millisecond, maxItems: maxItems, timeout: time.Second,
		run: func(_ context.Context, key string, items []int) (map[int]string, error) {
			calls.Add(1)
			mu.Lock()
			*sizes = append(*sizes, len(items))
			mu.Unlock()
			out := map[int]string{}
			for _, i := range items {
				if i < 0 {
					return nil, errBad
				}
				if i%10 != 7 { // items ending in 7 "do not exist"
					out[i] = fmt.Sprintf("%s:%d", key, i)
				}
			}
			return out, nil
		},
		missing:    func(i int) error { return fmt.Errorf("item %d not found", i) },
		splittable: func(err error) bool { return errors.Is(err, errBad) },
	}
}

func TestBatcherCoalescesAndFansOut(t *testing.T) {
	var calls atomic.Int32
	var sizes []int
	var mu sync.Mutex
	b := newTestBatcher(200, &calls, &sizes, &mu)
	const n = 450
	var wg sync.WaitGroup
	errs := make([]error, n)
	vals := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals[i], errs[i] = b.do(context.Background(), "k", i)
		}()
	}
	wg.Wait()
	if got := calls.Load(); got != 3 {
		t.Fatalf("%d calls for %d items with batches of 200, want 3 (sizes %v)", got, n, sizes)
	}
	for i := 0; i < n; i++ {
		if i%10 == 7 {
			if errs[i] == nil {
				t.Errorf("item %d: want a not-found error", i)
			}
			continue
		}
		if errs[i] != nil || vals[i] != fmt.Sprintf("k:%d", i) {
			t.Errorf("item %d: got %q, %v", i, vals[i], errs[i])
		}
	}
}

func TestBatcherKeysAreSeparateAndDuplicatesSentOnce(t *testing.T) {
	var calls atomic.Int32
	var sizes []int
	var mu sync.Mutex
	b := newTestBatcher(200, &calls, &sizes, &mu)
	var wg sync.WaitGroup
	for _, key := range []string{"a", "b"} {
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := b.do(context.Background(), key, 1) // the same item ten times
				if err != nil || v != key+":1" {
					t.Errorf("key %s: got %q, %v", key, v, err)
				}
			}()
		}
	}
	wg.Wait()
	if calls.Load() != 2 || sizes[0] != 1 || sizes[1] != 1 {
		t.Fatalf("calls %d sizes %v, want 2 calls of 1 item", calls.Load(), sizes)
	}
}

func TestBatcherSplitsAFailedBatch(t *testing.T) {
	var calls atomic.Int32
	var sizes []int
	var mu sync.Mutex
	b := newTestBatcher(8, &calls, &sizes, &mu)
	items := []int{1, 2, 3, -4, 5, 6, 8, 9}
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	for i, item := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.do(context.Background(), "k", item)
		}()
	}
	wg.Wait()
	for i, item := range items {
		if item < 0 && !errors.Is(errs[i], errBad) {
			t.Errorf("bad item %d: err %v, want errBad", item, errs[i])
		}
		if item >= 0 && errs[i] != nil {
			t.Errorf("good item %d failed with its batch: %v", item, errs[i])
		}
	}
	// 8 -> 4+4 -> (2+2) -> (1+1): 1 + 2 + 2 + 2 = 7 calls.
	if got := calls.Load(); got != 7 {
		t.Fatalf("%d calls, want 7 (bisection down to the bad item; sizes %v)", got, sizes)
	}
}

func TestBatcherCallerCancellation(t *testing.T) {
	var calls atomic.Int32
	var sizes []int
	var mu sync.Mutex
	b := newTestBatcher(200, &calls, &sizes, &mu)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.do(ctx, "k", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// The batch still goes out and does not block anyone.
	if v, err := b.do(context.Background(), "k", 2); err != nil || v != "k:2" {
		t.Fatalf("got %q, %v", v, err)
	}
}

// Under a rate limit, due batches get the limiter's tokens in the order
// they fell due, keep taking items while they wait, and the call made
// with a token taken for it does not wait again.
func TestBatcherServesDueBatchesOldestFirst(t *testing.T) {
	var (
		mu      sync.Mutex
		order   []string
		sizes   = map[string]int{}
		prepaid = map[string]bool{}
	)
	tokens := make(chan struct{})
	b := &batcher[string, int, string]{
		idle: 5 * time.Millisecond, maxWait: 50 * time.Millisecond, maxItems: 100, timeout: 5 * time.Second,
		run: func(ctx context.Context, key string, items []int) (map[int]string, error) {
			mu.Lock()
			order, sizes[key], prepaid[key] = append(order, key), len(items), spendPrepaidToken(ctx)
			mu.Unlock()
			out := map[int]string{}
			for _, i := range items {
				out[i] = key
			}
			return out, nil
		},
		missing: func(i int) error { return fmt.Errorf("item %d not found", i) },
		gate:    func() time.Duration { return time.Hour }, // the limiter is always short
		take: func(ctx context.Context) error {
			select {
			case <-tokens:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	var wg sync.WaitGroup
	ask := func(key string, item int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.do(context.Background(), key, item); err != nil {
				t.Error(err)
			}
		}()
	}
	queued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for {
			b.mu.Lock()
			got := len(b.due)
			b.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d batches due, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i, key := range []string{"a", "b", "c"} {
		ask(key, i)
		queued(i + 1) // each falls due after the one before
	}
	ask("a", 10) // joins the waiting batch
	ask("c", 11)
	time.Sleep(20 * time.Millisecond)
	for n := 1; n <= 3; n++ { // one token at a time: which batch gets it
		tokens <- struct{}{}
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			got := len(order)
			mu.Unlock()
			if got == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("token %d: no call", n)
			}
		}
	}
	wg.Wait()
	if !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Errorf("calls in order %v, want a, b, c (the order they fell due)", order)
	}
	if sizes["a"] != 2 || sizes["b"] != 1 || sizes["c"] != 2 {
		t.Errorf("batch sizes %v, want a:2 b:1 c:2 (items join a batch while it waits)", sizes)
	}
	for _, k := range []string{"a", "b", "c"} {
		if !prepaid[k] {
			t.Errorf("batch %s's call did not carry the token taken for it", k)
		}
	}
}

// With a pace, a new batch stays open while the open batches take a call
// each at the pace's rate (never less than maxWait); without one, or with
// no rate known, maxWait.
func TestBatchWindowFollowsThePace(t *testing.T) {
	for _, tc := range []struct {
		name string
		pace func() float64
		open int
		want time.Duration
	}{
		{"no pace", nil, 20, time.Second},
		{"no rate known", func() float64 { return 0 }, 20, time.Second},
		{"20 tag sets at 10 calls a second", func() float64 { return 10 }, 20, 2 * time.Second},
		{"5 tag sets at 10 calls a second: maxWait", func() float64 { return 10 }, 5, time.Second},
		{"20 tag sets, the rate halved by throttling", func() float64 { return 5 }, 20, 4 * time.Second},
	} {
		b := &batcher[int, int, struct{}]{maxWait: time.Second, pace: tc.pace, pending: map[int]*pendingBatch[int, struct{}]{}}
		for k := range tc.open {
			b.pending[k] = &pendingBatch[int, struct{}]{}
		}
		if got := b.windowLocked(); got != tc.want {
			t.Errorf("%s: window %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A batch's windows run on the batcher's clock: with the fake clock
// standing, the batch stays open however long the test waits; stepped
// past the idle window, it goes out as one call.
func TestBatcherWindowsRunOnItsClock(t *testing.T) {
	var calls atomic.Int32
	var sizes []int
	var mu sync.Mutex
	b := newTestBatcher(100, &calls, &sizes, &mu)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b.clock = clk
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if _, err := b.do(context.Background(), "k", i); err != nil {
				t.Error(err)
			}
		})
	}
	for {
		b.mu.Lock()
		n := 0
		if p := b.pending["k"]; p != nil {
			n = len(p.items)
		}
		b.mu.Unlock()
		if n == 3 {
			break
		}
		runtime.Gosched()
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls with the clock standing", n)
	}
	clk.Step(b.idle)
	wg.Wait()
	if n := calls.Load(); n != 1 || !slices.Equal(sizes, []int{3}) {
		t.Errorf("%d calls of sizes %v, want one of 3", n, sizes)
	}
}
