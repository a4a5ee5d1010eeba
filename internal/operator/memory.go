package operator

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
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
