package ec2

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// adaptiveLimiter is a token bucket whose rate drops when AWS throttles us
// and recovers while calls succeed (AIMD). AWS's buckets are shared with
// every other client of the account, so a fixed client-side rate is not
// enough: when someone else drains the bucket, we must slow down too.
type adaptiveLimiter struct {
	bucket *rate.Limiter

	mu         sync.Mutex
	configured float64   // the family's refill rate, AWS's scaled by --aws-rate-limit-share
	effective  float64   // the current rate
	floor      float64   // never slower than this
	lastCut    time.Time // decreases are at most once per cutInterval
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
	if burst < 1 {
		burst = 1
	}
	return &adaptiveLimiter{
		bucket:     rate.NewLimiter(rate.Limit(qps), burst),
		configured: qps,
		effective:  qps,
		floor:      qps / 16,
	}
}

// wait blocks until a token is available and returns how long it waited.
func (l *adaptiveLimiter) wait(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := l.bucket.Wait(ctx)
	return time.Since(start), err
}

// delay is how long until a token is likely free (0: one is free now).
// Batchers use it to keep a batch open, and growing, while the limiter
// would make its call wait anyway.
func (l *adaptiveLimiter) delay() time.Duration { return tokenDelay(l.bucket) }

// tokenDelay is how long until b likely has a token (0: it has one now).
func tokenDelay(b *rate.Limiter) time.Duration {
	tokens := b.Tokens()
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
	l.bucket.SetLimitAt(now, rate.Limit(l.effective))
}

// succeeded records a call AWS did not throttle.
func (l *adaptiveLimiter) succeeded(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.effective >= l.configured {
		return
	}
	l.effective = min(l.configured, l.effective+l.configured/recoverSteps)
	l.bucket.SetLimitAt(now, rate.Limit(l.effective))
}

// rate returns the current effective rate in calls per second.
func (l *adaptiveLimiter) rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.effective
}
