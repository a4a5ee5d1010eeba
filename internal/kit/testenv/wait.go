package testenv

import (
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 25 ms until it holds, and fails the test
// when timeout passes first; cond says what it saw, for the failure
// message.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	EventuallyEvery(t, what, timeout, 25*time.Millisecond, cond)
}

// EventuallyEvery is Eventually polling every interval (a condition that
// is costly to check, or one a measurement should not be disturbed by),
// and returns how long it took.
func EventuallyEvery(t testing.TB, what string, timeout, interval time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, seen := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, seen)
		}
		time.Sleep(interval)
	}
}

// InParallel calls f(0) … f(n-1), at most workers at a time (as many
// clients as a real cluster's would write at once), and returns when all
// have returned.
func InParallel(n, workers int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}
