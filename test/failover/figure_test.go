package failover

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

// TestFigureLeaderTakeover measures, for the bench report, how long the
// standby takes to take the Lease over once the leader is killed
// (SIGKILL), at the chart's leader election timings (15s, 10s, 2s): from
// the kill, and from the leader's last renewal, both from the audit
// log's timestamps. Opt-in (ENI_BENCH): each round waits out a lease.
func TestFigureLeaderTakeover(t *testing.T) {
	if os.Getenv("ENI_BENCH") == "" {
		t.Skip("a figure: run with ENI_BENCH=1")
	}
	const rounds, lease = 5, 15 * time.Second
	c := newCluster(t, testenv.StartControlPlane(t), 1, 0, 0)
	chart := []string{"--leader-elect-lease-duration=" + lease.String(), "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}
	name := func(i int) string { return fmt.Sprintf("replica-%d", i) }
	replicas := map[int]*testenv.Process{0: c.startReplica(name(0), chart...)}
	c.waitLeader(name(0), time.Time{})
	replicas[1] = c.startReplica(name(1), chart...)
	var fromKill, fromRenewal []float64
	for i := range rounds {
		time.Sleep(3 * time.Second) // the standby is up and watching the Lease
		cut := time.Now()
		replicas[i].Stop()
		took := c.waitLeader(name(i+1), cut)
		fromKill = append(fromKill, took.Sub(cut).Seconds())
		fromRenewal = append(fromRenewal, took.Sub(c.lastRenewal(name(i), took)).Seconds())
		replicas[i+2] = c.startReplica(name(i+2), chart...)
	}
	slices.Sort(fromKill)
	slices.Sort(fromRenewal)
	f := figure.Figure{Name: "LeaderTakeover",
		Parameters: map[string]any{"replicas": 2, "rounds": rounds, "leaseDuration": lease.String(), "renewDeadline": "10s", "retryPeriod": "2s"},
		Results: map[string]any{"secondsFromKillMedian": fromKill[rounds/2], "secondsFromKillMax": fromKill[rounds-1],
			"secondsFromLastRenewalMedian": fromRenewal[rounds/2], "secondsFromLastRenewalMax": fromRenewal[rounds-1]},
		Notes: []string{"the leader is killed with SIGKILL (no release); times are the API server's audit timestamps of the old leader's last renewal and the standby's acquisition"},
		Machine: map[string]any{"cores": runtime.NumCPU(), "goos": runtime.GOOS, "goarch": runtime.GOARCH,
			"date": time.Now().UTC().Format(time.RFC3339)}}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bench", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, f.Name+".json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", raw)
}
