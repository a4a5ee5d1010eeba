package operator

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestMemoryLimit(t *testing.T) {
	cases := []struct {
		name    string
		percent int
		env     string
		cgroup  int64
		want    int64
		set     bool
	}{
		{"90% of 512Mi", 90, "", 512 << 20, 512 << 20 / 100 * 90, true},
		{"100%", 100, "", 1000, 1000, true},
		{"GOMEMLIMIT set wins", 90, "300MiB", 512 << 20, 0, false},
		{"GOMEMLIMIT=off wins too", 90, "off", 512 << 20, 0, false},
		{"percent 0 is off", 0, "", 512 << 20, 0, false},
		{"no cgroup limit", 90, "", 0, 0, false},
		{"cgroup v1 unlimited", 90, "", 9223372036854771712, 0, false},
	}
	for _, c := range cases {
		got, set := memoryLimit(c.percent, c.env, c.cgroup)
		if got != c.want || set != c.set {
			t.Errorf("%s: memoryLimit(%d, %q, %d) = %d, %v; want %d, %v", c.name, c.percent, c.env, c.cgroup, got, set, c.want, c.set)
		}
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v2, v2max, v1, junk := write("v2", "536870912\n"), write("v2max", "max\n"), write("v1", "268435456\n"), write("junk", "lots")
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		files []string
		want  int64
	}{
		{[]string{v2, v1}, 536870912},
		{[]string{missing, v1}, 268435456},
		{[]string{v2max, v1}, 0},
		{[]string{junk, v1}, 268435456},
		{[]string{missing}, 0},
	}
	for _, c := range cases {
		if got := cgroupMemoryLimit(c.files); got != c.want {
			t.Errorf("cgroupMemoryLimit(%v) = %d, want %d", c.files, got, c.want)
		}
	}
}

func TestShouldRelease(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name        string
		free, inUse uint64
		want        bool
	}{
		{"nothing free", 0, 60 * mib, false},
		{"under the threshold", 15 * mib, 10 * mib, false},
		{"over the threshold, a large share of live", 40 * mib, 60 * mib, true},
		{"over the threshold, a small share of live", 60 * mib, 400 * mib, false},
		{"a quarter of a large heap", 101 * mib, 400 * mib, true},
	}
	for _, c := range cases {
		if got := shouldRelease(c.free, c.inUse); got != c.want {
			t.Errorf("%s: shouldRelease(%d, %d) = %v, want %v", c.name, c.free, c.inUse, got, c.want)
		}
	}
}

// TestMemoryReleaser: one release once the caches synced, then one per
// interval only while shouldRelease says so, none once stopped, and none
// at all if the caches never synced.
func TestMemoryReleaser(t *testing.T) {
	var released atomic.Int32
	var free atomic.Uint64
	free.Store(100 << 20)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	m := &memoryReleaser{synced: func(context.Context) bool { return true }, interval: 10 * time.Second, clock: clk,
		release: func() { released.Add(1); free.Store(0) }, free: func() (uint64, uint64) { return free.Load(), 60 << 20 }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	for !clk.HasWaiters() { // the ticker starts after the first release
		runtime.Gosched()
	}
	clk.Step(m.interval)
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times after the sync, want 1", n)
	}
	free.Store(100 << 20) // a burst's garbage
	clk.Step(m.interval)
	deadline := time.Now().Add(5 * time.Second)
	for released.Load() < 2 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := released.Load(); n != 2 {
		t.Fatalf("released %d times after a burst, want 2", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	never := &memoryReleaser{synced: func(context.Context) bool { return false }, interval: time.Millisecond, clock: clk,
		release: func() { t.Error("released before the caches synced") }, free: func() (uint64, uint64) { return 1 << 30, 0 }}
	if err := never.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// GOGC, when set, is the operator's user deciding; otherwise --gc-percent
// is the collector's target.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "200")
	if ApplyGCPercent(42) {
		t.Error("set the GC percent although GOGC is set")
	}
	t.Setenv("GOGC", "")
	if !ApplyGCPercent(42) {
		t.Fatal("did not set the GC percent")
	}
	if got := debug.SetGCPercent(100); got != 42 {
		t.Errorf("GC percent %d; want 42", got)
	}
}

func TestSampleHeapOnlyWhenProfiled(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	for _, tc := range []struct {
		addr string
		want int
	}{{"127.0.0.1:6060", 512 * 1024}, {":6060", 512 * 1024}, {"0", 0}} {
		runtime.MemProfileRate = 512 * 1024
		SampleHeapOnlyWhenProfiled(tc.addr)
		if runtime.MemProfileRate != tc.want {
			t.Errorf("pprof at %q: heap sampling rate %d; want %d", tc.addr, runtime.MemProfileRate, tc.want)
		}
	}
}
