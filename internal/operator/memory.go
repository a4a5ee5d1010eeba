package operator

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// noCgroupLimit is above any real limit: cgroup v1 reports "unlimited"
// as a number near 2^63.
const noCgroupLimit = 1 << 62

// memoryLimit works out the Go soft memory limit (bytes) for a process
// whose container may use cgroupLimit bytes (0: none known): percent of
// it, so the garbage collector works harder before the kernel's OOM
// killer would. It says false when nothing is to be set: GOMEMLIMIT is
// set (the operator's user decides), percent is 0, or there is no limit.
func memoryLimit(percent int, gomemlimitEnv string, cgroupLimit int64) (int64, bool) {
	if gomemlimitEnv != "" || percent <= 0 || cgroupLimit <= 0 || cgroupLimit >= noCgroupLimit {
		return 0, false
	}
	return cgroupLimit / 100 * int64(percent), true
}

// cgroupMemoryLimit reads the container's memory limit; 0 when there is
// none or it cannot be read.
func cgroupMemoryLimit(files []string) int64 {
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(raw))
		if s == "max" {
			return 0
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return 0
}

// ApplyMemoryLimit sets the Go soft memory limit to percent of the
// container's memory limit, unless GOMEMLIMIT is set, and returns what it
// set (0: nothing).
func ApplyMemoryLimit(percent int) int64 {
	// Where a container's memory limit shows, cgroup v2 first, then v1
	// (as seen from inside the container's cgroup namespace).
	files := []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	limit, ok := memoryLimit(percent, os.Getenv("GOMEMLIMIT"), cgroupMemoryLimit(files))
	if !ok {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// ApplyGCPercent sets the garbage collector's target heap growth to
// percent unless GOGC is set, and says whether it did. With Go's 100 the
// heap grows to twice the live heap between collections; a burst's
// garbage then scatters what the caches keep over twice the pages, and
// they stay resident: at 10,000 pods, 50 took RSS from 120 to 105 MiB
// just after the burst and from 135 to 93 MiB after a restart.
func ApplyGCPercent(percent int) bool {
	if os.Getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}

// SampleHeapOnlyWhenProfiled turns the runtime's heap sampling off when
// no pprof endpoint serves it (pprofAddr "0"): the samples' call-stack
// table is 1.6 MiB of RSS at 10,000 pods that nothing would read.
func SampleHeapOnlyWhenProfiled(pprofAddr string) {
	if pprofAddr == "0" || pprofAddr == "" {
		runtime.MemProfileRate = 0
	}
}

// releaseThreshold is how much heap the Go runtime may keep free, not yet
// returned to the OS, before the operator returns it at once. The
// runtime's background scavenger keeps up to about the next collection's
// goal (1.5 times the live heap at --gc-percent 50): after the initial
// LIST of every pod, or a burst of tagging, that is tens of MiB of RSS
// doing nothing until the next burst.
const releaseThreshold = 16 << 20

// releaseInterval is how often the operator looks at its free heap: a
// forced collection and release costs a few milliseconds per 100 MiB of
// live heap, once per interval at most.
const releaseInterval = 10 * time.Second

// shouldRelease decides, from the heap's free bytes not yet returned to
// the OS and its live (in use) bytes, whether returning them is worth a
// forced collection: more than releaseThreshold, and more than a quarter
// of the live heap (below that the runtime's own pacing is close enough).
func shouldRelease(freeNotReleased, inUse uint64) bool {
	return freeNotReleased > releaseThreshold && freeNotReleased > inUse/4
}

// heapFree reads the heap's free bytes not yet returned to the OS and
// the bytes in use, from runtime/metrics (no stop-the-world, unlike
// runtime.ReadMemStats).
func heapFree() (free, inUse uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// memoryReleaser returns free heap to the OS once the informer caches
// have synced (the initial LIST's objects, decoded before the cache's
// transform trims them, are garbage by then) and then whenever a burst
// has left more free heap than shouldRelease allows. It runs on every
// replica: each holds the caches.
type memoryReleaser struct {
	synced   func(context.Context) bool
	interval time.Duration
	// release is debug.FreeOSMemory; tests count calls instead.
	release func()
	free    func() (free, inUse uint64)
	clock   clock.WithTicker
}

func newMemoryReleaser(c interface{ WaitForCacheSync(context.Context) bool }) *memoryReleaser {
	return &memoryReleaser{synced: c.WaitForCacheSync, interval: releaseInterval, release: debug.FreeOSMemory, free: heapFree,
		clock: clock.RealClock{}}
}

// NeedLeaderElection is false: standby replicas hold the caches too.
func (m *memoryReleaser) NeedLeaderElection() bool { return false }

func (m *memoryReleaser) Start(ctx context.Context) error {
	if !m.synced(ctx) {
		return nil // stopped before the caches synced
	}
	m.release()
	t := m.clock.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if shouldRelease(m.free()) {
				m.release()
			}
		}
	}
}
