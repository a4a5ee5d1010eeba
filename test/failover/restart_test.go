package failover

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// Sizes of the restart scenario: enough pods and nodes that a relist is
// visible, few enough to keep make test fast.
const (
	restartPods  = 100
	restartNodes = 4
)

// restart is one kill -9 of a control plane binary and its restart with
// the same data, while the operator runs.
type restart struct {
	name string
	// down is how long the binary stays dead.
	down       time.Duration
	kill, back func()
}

// TestControlPlaneKilled: etcd and then kube-apiserver are killed with
// SIGKILL and restarted on the same data directory and certificates
// while the operator runs (leader election on, the chart's timings).
// The operator recovers without a restart: the process lives on, its
// watches resume with at most one relist per resource and restart, and
// nothing converged before is written again; a pod created after the
// restarts is tagged.
func TestControlPlaneKilled(t *testing.T) {
	cp := testenv.StartControlPlane(t)
	c := newCluster(t, cp, restartPods, restartNodes, 0)
	op := c.startReplica("replica-a", chartTimings...)
	c.survivesRestarts(op, []restart{
		{name: "etcd", down: 2 * time.Second, kill: cp.KillEtcd, back: func() { cp.StartEtcd(t) }},
		{name: "kube-apiserver", kill: cp.KillAPIServer, back: func() { cp.StartAPIServer(t) }},
	})
}

// TestAPIServerOutage60s: kube-apiserver is killed and comes back after
// 60 s. A single replica without leader election recovers without a
// restart. (A leader cannot: it gives its Lease up after
// --leader-elect-renew-deadline without renewing, and exits, by design:
// it cannot tell an outage from a partition in which a standby took
// over.) It takes about a minute and a half, most of it the outage.
func TestAPIServerOutage60s(t *testing.T) {
	cp := testenv.StartControlPlane(t)
	c := newCluster(t, cp, restartPods, restartNodes, 0)
	op := c.startReplica("replica-a", "--leader-elect=false")
	c.survivesRestarts(op, []restart{
		{name: "kube-apiserver", down: time.Minute, kill: cp.KillAPIServer, back: func() { cp.StartAPIServer(t) }},
	})
}

// survivesRestarts lets the operator converge, carries out the restarts
// and checks, from the audit log and the emulator's call log, that it
// recovered without a restart, relisted at most once per resource and
// restart, and wrote nothing twice.
func (c *cluster) survivesRestarts(op *testenv.Process, restarts []restart) {
	c.t.Helper()
	created := c.createPods()
	c.createNodeENIs()
	<-created
	c.converge("convergence before the restarts", 3*time.Minute, func(int) bool { return false })
	mark := time.Now()
	ec2Before := len(c.ec2Writes("replica-a"))
	// Settled: the ledger's last flush is in.
	time.Sleep(time.Second)
	for _, r := range restarts {
		r.kill()
		c.t.Logf("%s killed (SIGKILL), down for %v", r.name, r.down)
		time.Sleep(r.down)
		start := time.Now()
		r.back()
		c.t.Logf("%s back after %v", r.name, time.Since(start).Round(time.Millisecond))
		if op.Exited() {
			c.t.Fatalf("the operator exited during the %s restart", r.name)
		}
	}
	// Give the informers time to resume, then check nothing was written
	// again and a new change is acted on.
	time.Sleep(5 * time.Second)
	if op.Exited() {
		c.t.Fatal("the operator exited after the restarts")
	}
	c.checkNothingRewritten(mark, ec2Before)
	c.checkRelists(mark, len(restarts))
	c.deletePods(10)
	// After a long outage the informers' watches come back only after
	// client-go's reflector backoff (up to 30 s, jittered up to twice
	// that): after the 60 s outage these deletions, made 5 s after the
	// API server was back, were acted on 41-70 s after they were made.
	c.converge("a change after the restarts acted on", 3*time.Minute, func(i int) bool { return i < 10 })
	if op.Exited() {
		c.t.Fatal("the operator exited")
	}
}

// checkNothingRewritten: no EC2 write and no Kubernetes write of the
// operator but its Lease and Events since mark, when everything had
// converged.
func (c *cluster) checkNothingRewritten(mark time.Time, ec2Before int) {
	c.t.Helper()
	all := c.ec2Writes("replica-a")
	for _, w := range all[ec2Before:] {
		// Whether it writes an ENI again or for the first time (the
		// check declared convergence too early) is in the call log.
		c.t.Errorf("an EC2 write after convergence, across the restarts, at %s, naming ENIs written %d times before: %s %v",
			w.Time.Format("15:04:05.000"), eniNamedIn(all[:ec2Before], w), w.Action, w.Params)
	}
	for _, e := range c.cp.Audit(c.t) {
		if e.User.Username == "replica-a" && e.Write() && e.Received.After(mark) &&
			!slices.Contains([]string{"leases", "events"}, e.ObjectRef.Resource) {
			c.t.Errorf("written again across the restarts: %s %s %s/%s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name)
		}
	}
}

// checkRelists counts the operator's successful full reads of each
// resource (LISTs and streaming lists) since mark: a watch that resumes
// relists at most once per restart; more would be a storm. Failed
// attempts (the API server starting) are logged, not counted.
func (c *cluster) checkRelists(mark time.Time, restarts int) {
	c.t.Helper()
	per, failed := map[string]int{}, map[string]int{}
	for _, e := range c.cp.Audit(c.t) {
		if e.User.Username != "replica-a" || !e.List() || !e.Received.After(mark) {
			continue
		}
		if e.ResponseStatus.Code == 200 {
			per[e.ObjectRef.Resource]++
		} else {
			failed[e.ObjectRef.Resource]++
		}
	}
	var seen []string
	for r, n := range per {
		seen = append(seen, fmt.Sprintf("%s=%d (+%d failed)", r, n, failed[r]))
		if n > restarts {
			c.t.Errorf("%d full reads of %s across %d restarts: a relist storm", n, r, restarts)
		}
	}
	sort.Strings(seen)
	c.t.Logf("full reads (LIST or streaming list) per resource across the restarts: %s", strings.Join(seen, " "))
}

// eniNamedIn counts the calls that name one of the ENIs call names.
func eniNamedIn(calls []emulator.Call, call emulator.Call) int {
	ids := enisOf(call)
	n := 0
	for _, o := range calls {
		if slices.ContainsFunc(enisOf(o), func(id string) bool { return slices.Contains(ids, id) }) {
			n++
		}
	}
	return n
}
