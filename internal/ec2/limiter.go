package ec2

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// adaptiveLimiter is the client side of one of AWS's throttling
// families. AWS gives each action its own token bucket, sized by its
// family, so the limiter keeps one bucket per action (made at its first
// call), each with the family's burst. Their common refill rate drops
// when AWS throttles any action of the family and recovers while calls
// succeed (AIMD): AWS's buckets are shared with every other client of the
// account, so a fixed client-side rate is not enough; when someone else
// drains a bucket, we must slow down too.
type adaptiveLimiter struct {
	burst int

	mu         sync.Mutex
	buckets    map[string]*rate.Limiter // by action
	configured float64                  // the family's refill rate, AWS's scaled by --aws-rate-limit-share
	effective  float64                  // the current rate
	floor      float64                  // never slower than this
	lastCut    time.Time                // decreases are at most once per cutInterval
}

const (
	// cutFactor is the multiplicative decrease on throttling.
	cutFactor = 0.5
	// cutInterval groups the throttles of one burst into one decrease.
	cutInterval = time.Second
	// recoverSteps is how many successes take the rate from the floor back
	// to the ceiling: each success adds configured/recoverSteps.
	recoverSteps = 100
)

func newAdaptiveLimiter(qps float64, burst int) *adaptiveLimiter {
	return &adaptiveLimiter{
		burst:      max(1, burst),
		buckets:    map[string]*rate.Limiter{},
		configured: qps,
		effective:  qps,
		floor:      qps / 16,
	}
}

// bucket returns the action's bucket, full when new.
func (l *adaptiveLimiter) bucket(action string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[action]
	if !ok {
		b = rate.NewLimiter(rate.Limit(l.effective), l.burst)
		l.buckets[action] = b
	}
	return b
}

// delay is how long until the action's bucket likely has a token (0: it
// has one now). Batchers use it to keep a batch open, and growing, while
// the limiter would make its call wait anyway.
func (l *adaptiveLimiter) delay(action string, now time.Time) time.Duration {
	return tokenDelay(l.bucket(action), now)
}

// takeToken blocks until b gives a token, on clk (rate.Limiter's own
// Wait reads the wall clock), and returns how long that took.
func takeToken(ctx context.Context, clk clock.Clock, b *rate.Limiter) (time.Duration, error) {
	now := clk.Now()
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return 0, fmt.Errorf("rate limiter of burst %d cannot give a token", b.Burst())
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return 0, nil
	}
	// As rate.Limiter.Wait: a wait past the deadline is given up at once,
	// so it does not hold back the calls behind it until then.
	if deadline, ok := ctx.Deadline(); ok && now.Add(d).After(deadline) {
		r.CancelAt(now)
		return 0, fmt.Errorf("waiting %v for a rate-limiter token would pass the call's deadline", d)
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return d, nil
	case <-ctx.Done():
		r.CancelAt(clk.Now()) // the token goes back to the calls after it
		return clk.Since(now), ctx.Err()
	}
}

// tokenDelay is how long until b likely has a token (0: it has one now).
func tokenDelay(b *rate.Limiter, now time.Time) time.Duration {
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	lim := float64(b.Limit())
	if lim <= 0 {
		return 0
	}
	return time.Duration((1 - tokens) / lim * float64(time.Second))
}

// throttled records a RequestLimitExceeded answer.
func (l *adaptiveLimiter) throttled(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastCut) < cutInterval {
		return
	}
	l.lastCut = now
	l.effective = max(l.floor, l.effective*cutFactor)
	l.setRate(now)
}

// succeeded records a call AWS did not throttle.
func (l *adaptiveLimiter) succeeded(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.effective >= l.configured {
		return
	}
	l.effective = min(l.configured, l.effective+l.configured/recoverSteps)
	l.setRate(now)
}

// setRate gives every bucket of the family the effective rate; l.mu must
// be held.
func (l *adaptiveLimiter) setRate(now time.Time) {
	for _, b := range l.buckets {
		b.SetLimitAt(now, rate.Limit(l.effective))
	}
}

// rate returns the current effective rate in calls per second.
func (l *adaptiveLimiter) rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.effective
}

// prepaidToken marks a call whose first attempt's rate-limiter token a
// batcher has already taken (batcher.drain): that attempt spends it
// instead of waiting again; retries, and the halves of a split batch
// after the first, wait as usual.
type prepaidToken struct{ spent atomic.Bool }

type prepaidTokenKey struct{}

func withPrepaidToken(ctx context.Context) context.Context {
	return context.WithValue(ctx, prepaidTokenKey{}, &prepaidToken{})
}

// spendPrepaidToken reports whether ctx carries a token not spent yet,
// and spends it.
func spendPrepaidToken(ctx context.Context) bool {
	p, ok := ctx.Value(prepaidTokenKey{}).(*prepaidToken)
	return ok && p.spent.CompareAndSwap(false, true)
}
