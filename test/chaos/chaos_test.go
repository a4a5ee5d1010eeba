// Package chaos runs the whole operator (pod tagger, NodeENI controller,
// collector) against a misbehaving EC2 and an unreliable API server, and
// checks the invariants that matter from the emulator's state and the API
// server — never from the operator's own view.
package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

const (
	pods    = 200
	nodes   = 20
	groups  = 10
	cluster = "chaos"
	ns      = "chaos-apps"
	opsNS   = "chaos-ops"
)

type world struct {
	t       *testing.T
	ec2     *testenv.EC2
	k8s     client.Client
	podENIs []emulator.LoadedENI
	// costCenter is the pods' namespace's label, which an ENITagPolicy
	// puts on every pod's ENI.
	costCenter string
}

func newWorld(t *testing.T, cfg *rest.Config) *world {
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 100 * time.Millisecond, Seed: 7}, testenv.DefaultWorld(
		testenv.WithNodes(nodes, "m5.xlarge"), testenv.WithENIs(testenv.BranchENIs(pods, map[string]string{"Name": "branch"}))))
	w := &world{t: t, ec2: e, k8s: testenv.Client(t, cfg), podENIs: e.World.NetworkInterfaces, costCenter: "100"}
	testenv.CreateNamespaces(t, w.k8s, ns, opsNS)
	w.labelNamespace(w.costCenter)
	for i, inst := range e.World.Instances {
		testenv.CreateNode(t, w.k8s, testenv.Node{Name: testenv.NodeName(i), Instance: inst.ID, Zone: testenv.Zone(i), Labels: map[string]string{"role": "multus"}})
	}
	ctx := context.Background()
	if err := w.k8s.Create(ctx, &v1alpha1.ENITagPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chaos-cost"}, Spec: v1alpha1.ENITagPolicySpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		Enforced:          []v1alpha1.TagRule{{Key: "CostCenter", Expression: "namespaceObject.labels['cost-center']"}},
	}}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]v1alpha1.NodeENISpec{
		"multus":  {NodeSelector: map[string]string{"role": "multus"}, SubnetNames: []string{"multus-a", "multus-b"}, SecurityGroupNames: []string{"multus"}, DeviceIndex: 1},
		"storage": {NodeSelector: map[string]string{"role": "multus"}, SubnetNames: []string{"storage-a", "storage-b"}, SecurityGroupNames: []string{"multus"}, DeviceIndex: 2},
	} {
		if err := w.k8s.Create(ctx, &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// misbehave turns on the faults: 20% RequestLimitExceeded, 5% 500s and
// 0-30 ms of random latency on every EC2 call.
func (w *world) misbehave(on bool) {
	cfg := emulator.Config{FaultRate: ptr.To(0.0), Faults: map[string]emulator.Fault{}}
	if on {
		cfg = emulator.Config{FaultRate: ptr.To(0.05), Faults: map[string]emulator.Fault{"*": {
			ErrorRate: 0.2, ErrorCode: "RequestLimitExceeded", Jitter: emulator.Duration{Duration: 30 * time.Millisecond}}}}
	}
	if err := w.ec2.Emulator.Configure(cfg); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) createPods() {
	testenv.InParallel(pods, 16, func(i int) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%03d", i), Namespace: ns,
			Annotations: map[string]string{tagger.DefaultAnnotationKey: desiredAnnotation(i)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
		testenv.CreatePod(w.t, w.k8s, p, testenv.Running(w.podENIs[i].PrivateIP))
	})
}

func desiredAnnotation(i int) string { return fmt.Sprintf("App=app-%d,Team=team-%d", i%groups, i%3) }

// changed are the pods whose annotation changes during the API outage.
func changed(i int) bool { return i >= 150 && i < 170 }

func (w *world) desiredTags(i int) map[string]string {
	if changed(i) {
		return map[string]string{"App": "changed", "Team": fmt.Sprintf("team-%d", i%3), "CostCenter": w.costCenter}
	}
	return map[string]string{"App": fmt.Sprintf("app-%d", i%groups), "Team": fmt.Sprintf("team-%d", i%3), "CostCenter": w.costCenter}
}

// labelNamespace sets the pods' namespace's cost-center label.
func (w *world) labelNamespace(costCenter string) {
	w.t.Helper()
	var n corev1.Namespace
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		w.t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Labels["cost-center"] = costCenter
	if err := w.k8s.Patch(context.Background(), &n, patch); err != nil {
		w.t.Fatal(err)
	}
	w.costCenter = costCenter
}

func (w *world) annotate(name, value string) {
	w.t.Helper()
	for {
		var p corev1.Pod
		if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			w.t.Fatal(err)
		}
		p.Annotations[tagger.DefaultAnnotationKey] = value
		err := w.k8s.Update(context.Background(), &p)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			w.t.Fatal(err)
		}
	}
}

// start runs the whole operator — tagger, NodeENI controller, collector
// — through cfg; the returned manager's Stop kills it abruptly (nothing
// is flushed beyond what controller-runtime does on the way out). The one
// place this test builds the operator's EC2 client and manager.
func (w *world) start(cfg *rest.Config) *testenv.Manager {
	w.t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	return testenv.StartManager(w.t, cfg, ctrl.Options{
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{ns: {}}}}},
	}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		ec2c := w.ec2.Client(ec2.Config{QPS: 200, Burst: 200, MaxBackoff: 200 * time.Millisecond, Registerer: reg})
		to := tagger.DefaultOptions()
		to.Namespace, to.PodRateLimitQPS, to.InventoryInterval = opsNS, 0, 2*time.Second
		to.LedgerBatchInterval, to.Registerer, to.SkipNameValidation = 200*time.Millisecond, reg, true
		state := ec2.NewState(ec2c)
		if err := mgr.Add(state); err != nil {
			return err
		}
		if _, err := tagger.Setup(mgr, state, to); err != nil {
			return err
		}
		return nodeeni.Setup(mgr, state, nodeeni.Options{ClusterName: cluster, Keys: testenv.OwnershipKeys(), ResyncInterval: 2 * time.Second,
			DetachPollInterval: 100 * time.Millisecond, CollectorGracePeriod: 2 * time.Second, MinCatalogRefresh: 200 * time.Millisecond,
			Registerer: reg})
	})
}

// check verifies every invariant from the emulator and the API server,
// and returns what is wrong (empty when all hold).
func (w *world) check() []string {
	ctx := context.Background()
	var problems []string
	all := w.eniState()
	// Every pod's ENI carries exactly its desired tags, the token and the
	// tags it had before.
	for i, e := range w.podENIs {
		got := all[e.ID]
		want := maps.Clone(w.desiredTags(i))
		want["Name"] = "branch"
		want[tagger.HashTag] = tagplan.Hash(w.desiredTags(i))
		if !maps.Equal(got.Tags, want) {
			problems = append(problems, fmt.Sprintf("pod p-%03d: ENI %s tags %v, want %v", i, e.ID, got.Tags, want))
		}
	}
	// Exactly one attached ENI per (NodeENI, node), at its device index,
	// and no other ENI owned by the cluster.
	seen := map[string][]string{}
	for _, e := range all {
		if e.Tags[eniplan.TagCluster] != cluster {
			continue
		}
		key := e.Tags[eniplan.TagNodeENI] + "/" + e.Tags[eniplan.TagNode]
		seen[key] = append(seen[key], e.ID)
		if e.Attachment == nil || e.Attachment.Status != "attached" {
			problems = append(problems, fmt.Sprintf("ENI %s (%s) is not attached", e.ID, key))
		}
	}
	for _, ne := range []string{"multus", "storage"} {
		for n := range nodes {
			key := fmt.Sprintf("%s/node-%d", ne, n)
			if len(seen[key]) != 1 {
				problems = append(problems, fmt.Sprintf("%s has ENIs %v, want exactly one", key, seen[key]))
			}
			delete(seen, key)
		}
	}
	for key, ids := range seen {
		problems = append(problems, fmt.Sprintf("leaked ENIs %v for %s", ids, key))
	}
	for _, name := range []string{"multus", "storage"} {
		var ne v1alpha1.NodeENI
		if err := w.k8s.Get(ctx, client.ObjectKey{Name: name}, &ne); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !meta.IsStatusConditionTrue(ne.Status.Conditions, v1alpha1.ConditionReady) {
			problems = append(problems, fmt.Sprintf("NodeENI %s not Ready: %v", name, ne.Status.Conditions))
		}
	}
	sort.Strings(problems)
	return problems
}

// eniState reads every ENI through DescribeNetworkInterfaces with a
// client of its own (retrying whatever the faults throw at it).
func (w *world) eniState() map[string]awstypes.ENI {
	c := w.ec2.Client(ec2.Config{QPS: 1000, Burst: 1000, MaxAttempts: 20, MaxBackoff: 50 * time.Millisecond})
	enis, err := c.ListENIs(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]awstypes.ENI{}
	for _, e := range enis {
		out[e.ID] = e
	}
	return out
}

func (w *world) converge(timeout time.Duration) {
	w.t.Helper()
	testenv.EventuallyEvery(w.t, "convergence", timeout, time.Second, func() (bool, string) {
		problems := w.check()
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return len(problems) == 0, "\n" + strings.Join(problems, "\n")
	})
}

// TestChaos: faults, ten kills at random points and an API server outage
// while 200 pods and 20 nodes x 2 NodeENIs converge; then pod deletions.
func TestChaos(t *testing.T) {
	env := testenv.StartForTest(t)
	w := newWorld(t, env.Config)
	w.misbehave(true)
	outage, throughProxy, err := testenv.NewOutage(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outage.Close() })

	start := time.Now()
	created := make(chan struct{})
	go func() { defer close(created); w.createPods() }()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10 {
		op := w.start(env.Config)
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		_ = op.Stop()
		t.Logf("kill %d at %v", i+1, time.Since(start).Round(time.Millisecond))
	}
	op := w.start(throughProxy)
	time.Sleep(time.Second)
	<-created
	outage.Down()
	t.Log("API server unreachable for the operator for 10s; 20 pods change their annotation and the namespace its cost-center label meanwhile")
	for i := 150; i < 170; i++ {
		w.annotate(fmt.Sprintf("p-%03d", i), fmt.Sprintf("App=changed,Team=team-%d", i%3))
	}
	w.labelNamespace("200")
	time.Sleep(10 * time.Second)
	outage.Up(t)
	w.converge(3 * time.Minute)
	t.Logf("converged %v after the start, with faults on", time.Since(start).Round(time.Second))
	counts := w.ec2.Emulator.Counts()
	var calls, throttled, failed int
	for _, c := range counts {
		calls += c.Calls
		throttled += c.Throttled
		for _, n := range c.Errors {
			failed += n
		}
	}
	t.Logf("EC2: %d calls, %d errors injected or returned, %d throttled by buckets", calls, failed, throttled)

	// No pod is stuck in Terminating: deletions are immediate, and the
	// tags of the deleted pods go.
	for i := range 50 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%03d", i), Namespace: ns}}
		if err := w.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		var p corev1.Pod
		if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("p-%03d", i)}, &p); !apierrors.IsNotFound(err) {
			t.Fatalf("pod p-%03d still exists after deletion (%v)", i, err)
		}
	}
	testenv.EventuallyEvery(t, "the deleted pods' tags removed", 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		all, left := w.eniState(), 0
		for i := range 50 {
			if _, ok := all[w.podENIs[i].ID].Tags["App"]; ok {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d deleted pods' tags left behind", left)
	})
	_ = op.Stop()
}
