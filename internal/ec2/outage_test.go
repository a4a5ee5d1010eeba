package ec2

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// outageLength is how long EC2 is unreachable in TestLongOutage: 5s in
// make test. Time is shrunk there: the outage, and the client's backoff
// cap (500ms instead of the default 20s) so that 5s spans as many capped
// retries as minutes would. EC2_OUTAGE=10m go test -run TestLongOutage
// ./internal/ec2/ runs a real ten-minute outage (the backoff cap stays).
func outageLength(t *testing.T) time.Duration {
	d := 5 * time.Second
	if v := os.Getenv("EC2_OUTAGE"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("EC2_OUTAGE=%q: %v", v, err)
		}
	}
	return d
}

// EC2 unreachable (every connection dropped unanswered) for a long
// time, then back: the client recovers on its own, every write the
// callers kept asking for is made, EC2's health goes down and up again,
// and no action's calls — retries during the outage and the backlog
// when EC2 returns — ever exceed its client-side bucket (checked from
// the emulator's call log).
func TestLongOutage(t *testing.T) {
	outage := outageLength(t)
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a"}}})
	eni := w.loaded.NetworkInterfaces[0].ID
	bucket := Bucket{Burst: 5, Refill: 5}
	c := w.client(t, Config{MaxBackoff: 500 * time.Millisecond, UnreadyAfter: time.Second,
		Buckets: map[Family]Bucket{FamilyTags: bucket, FamilyDescribe: bucket}})
	var mu sync.Mutex
	var downs, ups int
	c.Health().OnChange(func(down bool) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			downs++
		} else {
			ups++
		}
	})

	const workers, rounds = 10, 4
	ctx, cancel := context.WithTimeout(context.Background(), outage+2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range rounds {
				// A caller keeps asking until it is done, as a requeued
				// reconcile does.
				for ctx.Err() == nil {
					if err := c.CreateTags(ctx, eni, map[string]string{fmt.Sprintf("k%d", i): fmt.Sprint(n)}); err == nil {
						break
					}
				}
				for ctx.Err() == nil {
					if _, err := c.GetENI(ctx, eni); err == nil {
						break
					}
				}
				time.Sleep(outage / 5)
			}
		}()
	}
	time.Sleep(outage / 8)
	setDown(t, w.emu, true)
	time.Sleep(outage)
	setDown(t, w.emu, false)
	back := time.Now()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the callers were not done %v after EC2 came back", time.Since(back))
	}
	t.Logf("every caller done %v after EC2 came back from a %v outage", time.Since(back).Round(time.Millisecond), outage)

	got, err := c.GetENI(context.Background(), eni)
	if err != nil {
		t.Fatal(err)
	}
	for i := range workers {
		if v := got.Tags[fmt.Sprintf("k%d", i)]; v != fmt.Sprint(rounds-1) {
			t.Errorf("tag k%d = %q, want the last write %d", i, v, rounds-1)
		}
	}
	mu.Lock()
	if downs == 0 || ups == 0 {
		t.Errorf("EC2 health went down %d and up %d times, want both", downs, ups)
	}
	mu.Unlock()
	calls := w.emu.Calls()
	unreachable := 0
	for _, call := range calls {
		if call.Code == "Unreachable" {
			unreachable++
		}
	}
	if unreachable == 0 {
		t.Fatal("no call met the outage: the test did not exercise it")
	}
	for _, action := range []string{"CreateTags", "DescribeNetworkInterfaces"} {
		if v := (emulator.Bucket{Size: float64(bucket.Burst), Refill: bucket.Refill}).Overrun(calls, action); v != "" {
			t.Errorf("%s exceeded its bucket %+v: %s", action, bucket, v)
		}
	}
	t.Logf("%d calls, %d met the outage", len(calls), unreachable)
}

func setDown(t *testing.T, e *emulator.Emulator, down bool) {
	t.Helper()
	if err := e.Configure(emulator.Config{Down: &down}); err != nil {
		t.Fatal(err)
	}
}
