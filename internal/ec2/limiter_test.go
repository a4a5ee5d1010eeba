package ec2

import (
	"testing"
	"time"
)

func TestAdaptiveLimiterAIMD(t *testing.T) {
	l := newAdaptiveLimiter(10, 20)
	t0 := time.Unix(1000, 0)

	l.throttled(t0)
	if got := l.rate(); got != 5 {
		t.Fatalf("after one throttle: rate %v, want 5", got)
	}
	// A burst of throttles within cutInterval is one event.
	l.throttled(t0.Add(100 * time.Millisecond))
	l.throttled(t0.Add(900 * time.Millisecond))
	if got := l.rate(); got != 5 {
		t.Fatalf("throttles within a second cut again: rate %v, want 5", got)
	}
	l.throttled(t0.Add(time.Second))
	if got := l.rate(); got != 2.5 {
		t.Fatalf("after a second cut: rate %v, want 2.5", got)
	}
	// Never below the floor.
	for i := 2; i < 20; i++ {
		l.throttled(t0.Add(time.Duration(i) * time.Second))
	}
	if got := l.rate(); got != 10.0/16 {
		t.Fatalf("floor: rate %v, want %v", got, 10.0/16)
	}
	// Additive recovery: configured/recoverSteps per success, capped.
	l.succeeded(t0.Add(time.Minute))
	if got, want := l.rate(), 10.0/16+0.1; got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("after one success: rate %v, want %v", got, want)
	}
	for i := 0; i < 200; i++ {
		l.succeeded(t0.Add(time.Minute))
	}
	if got := l.rate(); got != 10 {
		t.Fatalf("recovered rate %v, want the configured 10", got)
	}
}
