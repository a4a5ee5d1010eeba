package ec2

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The refresh loop runs on Config.Clock: a scope is read at start, not
// again before its interval has passed, and once when it has.
func TestStateRefreshesOnTheConfiguredClock(t *testing.T) {
	w := newWorld(t, emulator.World{})
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	s := NewState(w.client(t, Config{Clock: clk}))
	if err := s.Watch(Scope{Name: "vpc", Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	refreshed, err := s.Subscribe("vpc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	<-refreshed
	waitForTimer(t, clk)
	clk.Step(59 * time.Second)
	waitForTimer(t, clk)
	if n := w.calls("DescribeNetworkInterfaces"); n != 1 {
		t.Fatalf("%d describes before the interval passed, want the first one only", n)
	}
	clk.Step(time.Second)
	<-refreshed
	if n := w.calls("DescribeNetworkInterfaces"); n != 2 {
		t.Fatalf("%d describes once the interval passed, want 2", n)
	}
	_, taken := s.ENIsIn("vpc")
	if !taken.Equal(clk.Now()) {
		t.Errorf("refresh taken at %v, want the clock's %v", taken, clk.Now())
	}
}

// waitForTimer waits until the refresh loop waits on the fake clock.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the refresh loop never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}
