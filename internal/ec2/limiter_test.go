package ec2

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/time/rate"
	clocktesting "k8s.io/utils/clock/testing"
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

// takeToken waits on the clock it is given: a second token of a bucket
// refilling once a second comes when the fake clock has stepped that
// second, and a wait given up hands its token to the next caller.
func TestTakeTokenWaitsOnTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := rate.NewLimiter(1, 1)
	ctx := context.Background()
	if d, err := takeToken(ctx, clk, b); d != 0 || err != nil {
		t.Fatalf("first token: waited %v, %v", d, err)
	}
	got := make(chan time.Duration, 1)
	go func() {
		d, _ := takeToken(ctx, clk, b)
		got <- d
	}()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	select {
	case d := <-got:
		t.Fatalf("second token came after %v with the clock standing", d)
	default:
	}
	clk.Step(time.Second)
	if d := <-got; d != time.Second {
		t.Errorf("second token waited %v, want 1s", d)
	}

	// Given up: the reservation is cancelled, so the bucket's next token
	// is due one second from now, not two.
	cancelled, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := takeToken(cancelled, clk, b)
		done <- err
	}()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if d := tokenDelay(b, clk.Now()); d != time.Second {
		t.Errorf("after a cancelled wait the next token is %v away, want 1s", d)
	}
}

// A wait that would pass the caller's deadline fails at once, and its
// token stays for the next caller.
func TestTakeTokenGivesUpAWaitPastTheDeadline(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := rate.NewLimiter(1, 1)
	if _, err := takeToken(context.Background(), clk, b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(500*time.Millisecond))
	defer cancel()
	if d, err := takeToken(ctx, clk, b); err == nil || d != 0 {
		t.Fatalf("a 1 s wait with 500 ms left: waited %v, %v; want an error at once", d, err)
	}
	if d := tokenDelay(b, clk.Now()); d != time.Second {
		t.Errorf("the next token is %v away, want 1s: the given-up wait kept its token", d)
	}
}
