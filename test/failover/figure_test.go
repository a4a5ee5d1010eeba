package failover

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// chartTimings are the chart's leader election timings.
var chartTimings = []string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}

// TestFigureLeaderTakeover measures, for the bench report, how long the
// standby takes to take the Lease over, at the chart's leader election
// timings (15s, 10s, 2s): when the leader is killed (SIGKILL: the
// standby can only wait for the Lease to expire) and when it is stopped
// (SIGTERM, as a rolling update does: it gives the Lease up,
// --leader-elect-release-on-cancel). Each time is from the signal, and
// from the old leader's last Lease write (its last renewal, or its
// release), to the standby's first successful Lease write (its
// acquisition), all from the audit log's timestamps. Opt-in (ENI_BENCH):
// each killed round waits out a lease.
func TestFigureLeaderTakeover(t *testing.T) {
	if os.Getenv("ENI_BENCH") == "" {
		t.Skip("a figure: run with ENI_BENCH=1")
	}
	const rounds = 5
	c := newCluster(t, testenv.StartControlPlane(t), 1, 0, 0)
	r := &rotation{c: c, replicas: map[int]*testenv.Process{}}
	r.start(0)
	c.waitLeader(r.name(0), time.Time{})
	r.start(1)
	killed := r.takeovers(rounds, syscall.SIGKILL)
	stopped := r.takeovers(rounds, syscall.SIGTERM)
	results := map[string]any{}
	for what, s := range map[string]takeoverTimes{"Killed": killed, "Stopped": stopped} {
		slices.Sort(s.fromSignal) // sorts killed's and stopped's too: the slices are shared
		slices.Sort(s.fromLastWrite)
		results["secondsFromSignal"+what+"Median"] = s.fromSignal[rounds/2]
		results["secondsFromSignal"+what+"Max"] = s.fromSignal[rounds-1]
		results["secondsFromLastLeaseWrite"+what+"Median"] = s.fromLastWrite[rounds/2]
		results["secondsFromLastLeaseWrite"+what+"Max"] = s.fromLastWrite[rounds-1]
	}
	const lease, poll = 15.0, 2 * 2.2 // seconds: the lease, client-go's longest poll
	writeFigure(t, figure.Figure{Name: "9-leader-takeover",
		Parameters: map[string]any{"replicas": 2, "rounds": rounds, "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"},
		Results:    results,
		Checks: []figure.Check{
			figure.AtMost("stopped (SIGTERM): takeover after the signal, max", stopped.fromSignal[rounds-1], lease, "s",
				"issue 18: within the lease duration"),
			figure.AtMost("killed (SIGKILL): takeover after the last renewal, max", killed.fromLastWrite[rounds-1], lease+2*poll, "s",
				"issue 18's lease duration, plus the two polls client-go needs to see the last renewal and its expiry (each at most 2.2 x the retry period): a killed leader gives nothing up"),
		},
		Notes: []string{
			"Killed: the leader gets SIGKILL and gives nothing up; the standby takes over once the Lease it last saw renewed has expired: lease duration + up to two of its polls (client-go polls every retry period x 1 to 2.2, jittered) — one to see the last renewal, one to find it expired",
			"Stopped: the leader gets SIGTERM (a rolling update), stops its controllers and gives the Lease up; the standby acquires it at its next poll (retry period x 1 to 2.2 after the release)",
			"times: the API server's audit timestamps of the old leader's last Lease write (renewal or release) and the standby's acquisition; from the signal: the test's clock"}})
}

// rotation runs replicas replica-0, replica-1, …: the leader is always
// the oldest alive, a new standby is started after each takeover.
type rotation struct {
	c        *cluster
	replicas map[int]*testenv.Process
	next     int // the leader's index
}

func (r *rotation) name(i int) string { return fmt.Sprintf("replica-%d", i) }

func (r *rotation) start(i int) { r.replicas[i] = r.c.startReplica(r.name(i), chartTimings...) }

type takeoverTimes struct{ fromSignal, fromLastWrite []float64 }

// takeovers signals the leader rounds times with sig and times the
// standby's takeover each time.
func (r *rotation) takeovers(rounds int, sig syscall.Signal) takeoverTimes {
	c := r.c
	var out takeoverTimes
	for range rounds {
		i := r.next
		time.Sleep(3 * time.Second) // the standby is up and watching the Lease
		cut := time.Now()
		if err := r.replicas[i].Signal(sig); err != nil {
			c.t.Fatal(err)
		}
		took := c.waitLeader(r.name(i+1), cut)
		last := c.lastRenewal(r.name(i), took)
		if sig == syscall.SIGTERM && last.Before(cut) {
			c.t.Errorf("%s made no Lease write after SIGTERM: it did not give the Lease up", r.name(i))
		}
		out.fromSignal = append(out.fromSignal, took.Sub(cut).Seconds())
		out.fromLastWrite = append(out.fromLastWrite, took.Sub(last).Seconds())
		c.t.Logf("%v: %s took over %v after the signal, %v after %s's last Lease write", sig, r.name(i+1),
			took.Sub(cut).Round(time.Millisecond), took.Sub(last).Round(time.Millisecond), r.name(i))
		r.replicas[i].Stop()
		r.next = i + 1
		r.start(i + 2)
	}
	return out
}

// writeFigure writes f into bench/results for hack/bench-report.
func writeFigure(t *testing.T, f figure.Figure) {
	t.Helper()
	f.Machine = map[string]any{"cores": runtime.NumCPU(), "goos": runtime.GOOS, "goarch": runtime.GOARCH,
		"date": time.Now().UTC().Format(time.RFC3339)}
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
