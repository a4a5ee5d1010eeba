package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/operator"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// Leader election timings of the replicas: the defaults' proportions
// (15s, 10s, 2s) shortened so a failover takes seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

const (
	apps        = "apps"
	ops         = "eni-ops"
	clusterName = "failover"
	groups      = 10
)

// cluster is one test's world: a control plane the test runs itself, the
// EC2 emulator, pods' ENIs and nodes, and the operator binary.
type cluster struct {
	t       *testing.T
	cp      *testenv.ControlPlane
	ec2     *testenv.EC2
	k8s     client.Client
	bin     string
	podENIs []emulator.LoadedENI
	nodes   int
}

func newCluster(t *testing.T, cp *testenv.ControlPlane, pods, nodes int, latency time.Duration) *cluster {
	t.Helper()
	e := testenv.NewEC2(t, emulator.Options{Seed: 11, Latency: latency, DetachDelay: 100 * time.Millisecond}, testenv.DefaultWorld(
		testenv.WithNodes(nodes, "m5.xlarge"), testenv.WithENIs(testenv.BranchENIs(pods, map[string]string{"Name": "branch"}))))
	c := &cluster{t: t, cp: cp, ec2: e, k8s: testenv.Client(t, cp.User("test")), podENIs: e.World.NetworkInterfaces, nodes: nodes}
	testenv.CreateNamespaces(t, c.k8s, apps, ops)
	for i, inst := range e.World.Instances {
		testenv.CreateNode(t, c.k8s, testenv.Node{Name: testenv.NodeName(i), Instance: inst.ID, Zone: testenv.Zone(i), Labels: map[string]string{"role": "multus"}})
	}
	// ENI_OPERATOR_BIN runs a binary built before (as make bench does),
	// such as one of another revision.
	if c.bin = os.Getenv("ENI_OPERATOR_BIN"); c.bin == "" {
		c.bin = filepath.Join(t.TempDir(), "eni-operator")
		testenv.BuildCommand(t, "./cmd/eni-operator", c.bin)
	}
	return c
}

// startReplica runs one replica of the operator binary as user name of
// the API server (a client certificate of its own) and with access key
// ID name for EC2, so the audit log and the emulator's call log each
// attribute every request to one replica.
func (c *cluster) startReplica(name string, extra ...string) *testenv.Process {
	c.t.Helper()
	env := []string{"KUBECONFIG=" + testenv.WriteKubeconfig(c.t, c.cp.User(name)), "POD_NAMESPACE=" + ops}
	for k, v := range testenv.AWSEnv(c.ec2.URL) {
		env = append(env, k+"="+v)
	}
	env = append(env, "AWS_ACCESS_KEY_ID="+name)
	args := append([]string{"--vpc-id=" + c.ec2.VPC, "--cluster-name=" + clusterName,
		"--leader-elect", "--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(), "--leader-elect-retry-period=" + retryPeriod.String(),
		"--metrics-bind-address=0", "--health-probe-bind-address=" + testenv.FreeAddr(c.t),
		"--cache-batch-interval=500ms", "--nodeeni-resync-interval=5s", "--nodeeni-detach-poll-interval=200ms",
		// No node agent runs here: the NodeENIs would report its absence
		// (a status write) once this passed.
		"--nodeeni-agent-report-grace-period=1h"}, extra...)
	return testenv.StartProcess(c.t, name, c.bin, env, args...)
}

// leaseWrite is a successful write of the leader election Lease: who
// holds it from then on, and when the API server got the request.
type leaseWrite struct {
	user string
	at   time.Time
}

// leaseWrites reads the audit log for the Lease's successful creates and
// updates, in order.
func (c *cluster) leaseWrites() []leaseWrite {
	var out []leaseWrite
	for _, e := range c.cp.Audit(c.t) {
		if e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == operator.LeaderElectionID && e.Write() &&
			e.ResponseStatus.Code < 300 {
			out = append(out, leaseWrite{user: e.User.Username, at: e.Received})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// waitLeader waits until user writes the Lease after since (acquires or
// renews it) and returns when the API server got that write.
func (c *cluster) waitLeader(user string, since time.Time) time.Time {
	c.t.Helper()
	var at time.Time
	testenv.EventuallyEvery(c.t, user+" holding the Lease", time.Minute, 100*time.Millisecond, func() (bool, string) {
		ws := c.leaseWrites()
		for _, w := range ws {
			if w.user == user && w.at.After(since) {
				at = w.at
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Lease writes", len(ws))
	})
	return at
}

// lastRenewal is user's last successful Lease write before t.
func (c *cluster) lastRenewal(user string, t time.Time) time.Time {
	var last time.Time
	for _, w := range c.leaseWrites() {
		if w.user == user && w.at.Before(t) {
			last = w.at
		}
	}
	return last
}

// ec2Writes are the EC2 calls by access key that change something
// (DryRun permission checks change nothing), from the emulator's log.
func (c *cluster) ec2Writes(key string) []emulator.Call {
	var out []emulator.Call
	for _, call := range c.ec2.Emulator.Calls() {
		if call.AccessKeyID == key && !strings.HasPrefix(call.Action, "Describe") &&
			!slices.Contains(call.Params["DryRun"], "true") {
			out = append(out, call)
		}
	}
	return out
}

// eniNamed counts the ENIs the calls name.
func eniNamed(calls []emulator.Call) int {
	n := 0
	for _, call := range calls {
		n += len(enisOf(call))
	}
	return n
}

// enisOf returns the ENIs a call names.
func enisOf(call emulator.Call) []string {
	var ids []string
	for k, v := range call.Params {
		if strings.HasPrefix(k, "ResourceId") || strings.HasPrefix(k, "NetworkInterfaceId") {
			ids = append(ids, v...)
		}
	}
	return ids
}

// waitEC2Writes waits until replica key's EC2 writes name at least n
// ENIs.
func (c *cluster) waitEC2Writes(key string, n int) {
	c.t.Helper()
	testenv.EventuallyEvery(c.t, fmt.Sprintf("%s's EC2 writes naming %d ENIs", key, n), 2*time.Minute, 20*time.Millisecond, func() (bool, string) {
		got := eniNamed(c.ec2Writes(key))
		return got >= n, fmt.Sprint(got)
	})
}

// inFlightGrace and maxInFlight bound the writes a paused old leader had
// already passed its fence with when it was frozen: they land at once
// when it resumes (measured: 14 within 18 ms, batched tag writes among
// them), while writes decided after it would go on until it exits ~3 s
// later (an unfenced leader made hundreds, over 1.3 s).
const (
	inFlightGrace = 100 * time.Millisecond
	maxInFlight   = 64
)

// checkNoWritesAfter fails the test for every EC2 or Kubernetes write of
// user received at or after lost (the Lease's own writes aside: they are
// guarded by its resourceVersion) — but for at most maxInFlight of a
// paused leader (resumed non-zero) received while it was frozen (a
// stopped process sends nothing: a loaded API server read them late) or
// within inFlightGrace after resumed, the writes already on their way
// when it was frozen — and returns how many writes it made in all.
func (c *cluster) checkNoWritesAfter(user string, lost, frozen, resumed time.Time) int {
	c.t.Helper()
	inFlight := 0
	late := func(at time.Time, what string) {
		if at.Before(lost) {
			return
		}
		if !resumed.IsZero() && !at.Before(frozen) && at.Before(resumed.Add(inFlightGrace)) {
			inFlight++
			c.t.Logf("%s: %s landed %v after it was frozen, %v after it resumed (in flight when it was frozen)", user, what, at.Sub(frozen), at.Sub(resumed))
			return
		}
		c.t.Errorf("%s wrote after it lost the Lease (%v after): %s", user, at.Sub(lost), what)
	}
	ec2w := c.ec2Writes(user)
	for _, call := range ec2w {
		late(call.Time, fmt.Sprintf("%s %v", call.Action, call.Params))
	}
	k8sw := 0
	for _, e := range c.cp.Audit(c.t) {
		if e.User.Username != user || !e.Write() || e.ObjectRef.Resource == "leases" {
			continue
		}
		k8sw++
		late(e.Received, fmt.Sprintf("%s %s %s/%s (HTTP %d)", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name, e.ResponseStatus.Code))
	}
	if inFlight > maxInFlight {
		c.t.Errorf("%s made %d writes right after it resumed, more than the %d it can have had in flight", user, inFlight, maxInFlight)
	}
	return len(ec2w) + k8sw
}

func desiredTags(i int) map[string]string {
	return map[string]string{"App": fmt.Sprintf("app-%d", i%groups), "Team": fmt.Sprintf("team-%d", i%3)}
}

func podName(i int) string { return fmt.Sprintf("p-%03d", i) }

// createPods creates pods p-000 … running on the pods' ENIs, each asking
// for its tags, two at a time, in the background (a burst that lasts some
// seconds, so a leader killed once its first writes land is killed in
// its middle: the operator tags faster than 16 creators make pods); the
// returned channel closes when all are created.
func (c *cluster) createPods() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		testenv.InParallel(len(c.podENIs), 2, func(i int) {
			tags := desiredTags(i)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: apps,
				Annotations: map[string]string{tagger.DefaultAnnotationKey: "App=" + tags["App"] + ",Team=" + tags["Team"]}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
			testenv.CreatePod(c.t, c.k8s, p, testenv.Running(c.podENIs[i].PrivateIP))
		})
	}()
	return done
}

// nodeENIs are the two NodeENIs every node gets.
func nodeENIs() map[string]v1alpha1.NodeENISpec {
	return map[string]v1alpha1.NodeENISpec{
		"multus":  {NodeSelector: map[string]string{"role": "multus"}, SubnetNames: []string{"multus-a", "multus-b"}, SecurityGroupNames: []string{"multus"}, DeviceIndex: 1},
		"storage": {NodeSelector: map[string]string{"role": "multus"}, SubnetNames: []string{"storage-a", "storage-b"}, SecurityGroupNames: []string{"multus"}, DeviceIndex: 2},
	}
}

func (c *cluster) createNodeENIs() {
	c.t.Helper()
	for name, s := range nodeENIs() {
		if err := c.k8s.Create(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// enis reads every ENI with a client of the test's own.
func (c *cluster) enis() map[string]awstypes.ENI {
	c.t.Helper()
	list, err := c.ec2.Client(ec2.Config{QPS: 1000, Burst: 1000}).ListENIs(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]awstypes.ENI{}
	for _, e := range list {
		out[e.ID] = e
	}
	return out
}

// check returns what is wrong, from the emulator's ENIs and the API
// server's objects: each live pod's ENI carries exactly its tags, the
// token and what it had before, each deleted pod's ENI only what it had
// before; the ledger holds exactly one record per live pod, naming its
// ENI and tags; exactly one attached ENI per (NodeENI, node) in the
// node's zone's subnet, and no other ENI of the cluster.
func (c *cluster) check(deleted func(i int) bool) []string {
	all := c.enis()
	var problems []string
	for i, e := range c.podENIs {
		want := map[string]string{"Name": "branch"}
		if !deleted(i) {
			maps.Copy(want, desiredTags(i))
			want[tagger.HashTag] = tagplan.Hash(desiredTags(i))
		}
		if got := all[e.ID].Tags; !maps.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("pod %s: ENI %s tags %v, want %v", podName(i), e.ID, got, want))
		}
	}
	problems = append(problems, c.checkLedger(deleted)...)
	if c.nodes > 0 {
		problems = append(problems, c.checkNodeENIs(all)...)
	}
	sort.Strings(problems)
	return problems
}

func (c *cluster) checkLedger(deleted func(i int) bool) []string {
	ctx := context.Background()
	var pods corev1.PodList
	var cms corev1.ConfigMapList
	if err := c.k8s.List(ctx, &pods, client.InNamespace(apps)); err != nil {
		return []string{err.Error()}
	}
	if err := c.k8s.List(ctx, &cms, client.InNamespace(ops)); err != nil {
		return []string{err.Error()}
	}
	records := map[string]tagger.Record{}
	for _, cm := range cms.Items {
		if !strings.HasPrefix(cm.Name, "eni-tagger-cache-") {
			continue
		}
		for uid, raw := range cm.Data {
			var r tagger.Record
			if json.Unmarshal([]byte(raw), &r) == nil && r.UID == uid {
				records[uid] = r
			}
		}
	}
	var problems []string
	for _, p := range pods.Items {
		var i int
		if _, err := fmt.Sscanf(p.Name, "p-%d", &i); err != nil || deleted(i) {
			continue
		}
		r, ok := records[string(p.UID)]
		delete(records, string(p.UID))
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("ledger: no record of pod %s", p.Name))
		case r.ENI != c.podENIs[i].ID || !maps.Equal(r.Tags, desiredTags(i)):
			problems = append(problems, fmt.Sprintf("ledger: pod %s's record names %s %v, want %s %v", p.Name, r.ENI, r.Tags, c.podENIs[i].ID, desiredTags(i)))
		}
	}
	for _, r := range records {
		problems = append(problems, fmt.Sprintf("ledger: a record of %s (UID %s), which is gone", r.Pod, r.UID))
	}
	return problems
}

// checkNodeENIs: the cluster's ENIs, keyed NodeENI/node/subnet, are
// exactly one per NodeENI and node in the subnet of the node's zone, and
// attached.
func (c *cluster) checkNodeENIs(all map[string]awstypes.ENI) []string {
	want := map[string]bool{}
	for ne, spec := range nodeENIs() {
		for n := range c.nodes {
			want[ne+"/"+testenv.NodeName(n)+"/"+c.ec2.Subnets[spec.SubnetNames[n%2]]] = true
		}
	}
	var problems []string
	got := map[string][]string{}
	for id, e := range all {
		if e.Tags[eniplan.TagCluster] != clusterName {
			continue
		}
		key := e.Tags[eniplan.TagNodeENI] + "/" + e.Tags[eniplan.TagNode] + "/" + e.SubnetID
		got[key] = append(got[key], id)
		if e.Attachment == nil || e.Attachment.Status != "attached" {
			problems = append(problems, fmt.Sprintf("ENI %s (%s) is not attached", id, key))
		}
	}
	for key := range want {
		if len(got[key]) != 1 {
			problems = append(problems, fmt.Sprintf("%s has ENIs %v, want exactly one", key, got[key]))
		}
	}
	for key, ids := range got {
		if !want[key] {
			problems = append(problems, fmt.Sprintf("ENIs %v for %s, which should have none", ids, key))
		}
	}
	return problems
}

// converge waits until check finds nothing wrong.
func (c *cluster) converge(what string, timeout time.Duration, deleted func(i int) bool) time.Duration {
	c.t.Helper()
	return testenv.EventuallyEvery(c.t, what, timeout, time.Second, func() (bool, string) {
		problems := c.check(deleted)
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return len(problems) == 0, "\n" + strings.Join(problems, "\n")
	})
}

// deletePods deletes pods p-000 … p-(n-1).
func (c *cluster) deletePods(n int) {
	c.t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: apps}}
			if err := c.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
				c.t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// count counts the successful EC2 calls of action, by anyone.
func (c *cluster) count(action string) int {
	n := 0
	for _, call := range c.ec2.Emulator.Calls() {
		if call.Action == action && call.Code == "" && !slices.Contains(call.Params["DryRun"], "true") {
			n++
		}
	}
	return n
}
