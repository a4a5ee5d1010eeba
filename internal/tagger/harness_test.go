package tagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

// TEST_LOG=1 shows the operator's logs.
func TestMain(m *testing.M) { testenv.Main(m, &shared) }

var nsSeq atomic.Int64

// harness is one test's world: an emulator over HTTP, a namespace for
// pods, one for the operator's ledger, and a manager running the tagger.
type harness struct {
	t      *testing.T
	emu    *emulator.Emulator
	ec2    *testenv.EC2
	loaded emulator.LoadResult // of the test's extra world
	k8s    client.Client
	ns     string
	opsNS  string

	// logger, when set, is the manager's logger (tests that read the log).
	logger *logr.Logger

	mgr *testenv.Manager
	rec *tagger.Reconciler
	reg *prometheus.Registry

	// kubeQPS, when set, is the manager client's rate limit (the
	// operator's --kube-api-qps; its burst twice that).
	kubeQPS float32
	// scopes, when set, are watched by the EC2 state besides the
	// tagger's, as the NodeENI controller's is in the operator; state is
	// the running manager's.
	scopes []ec2.Scope
	state  *ec2.State
}

// newHarness loads VPC "main" with subnet "a" (dual-stack, us-east-1a)
// and "b" (us-east-1b), then extra.
func newHarness(t *testing.T, extra emulator.World) *harness {
	t.Helper()
	w := testenv.DefaultWorld()
	w.Subnets = []emulator.SubnetSpec{
		{Name: "a", VPC: "main", CIDR: "10.0.0.0/18", AvailabilityZone: "us-east-1a", IPv6CIDR: "2600:1f18::/64"},
		{Name: "b", VPC: "main", CIDR: "10.0.64.0/18", AvailabilityZone: "us-east-1b"}}
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, w)
	h := &harness{t: t, emu: e.Emulator, ec2: e, loaded: e.Load(t, extra), k8s: testenv.Client(t, shared.Env(t).Config)}
	n := nsSeq.Add(1)
	h.ns, h.opsNS = fmt.Sprintf("apps-%d", n), fmt.Sprintf("ops-%d", n)
	testenv.CreateNamespaces(t, h.k8s, h.ns, h.opsNS)
	e.Emulator.ResetCounts()
	t.Cleanup(h.stopManager)
	return h
}

// options are the defaults tests start from: fast batching, no per-pod
// rate limit, no inventory unless a test wants one.
func (h *harness) options() tagger.Options {
	o := tagger.DefaultOptions()
	o.Namespace = h.opsNS
	o.LedgerBatchInterval = 100 * time.Millisecond
	o.PodRateLimitQPS = 0
	o.InventoryInterval = 0
	o.SkipNameValidation = true
	return o
}

// ec2Client is an EC2 client of the emulator with its metrics in reg
// (nil: none).
func (h *harness) ec2Client(reg prometheus.Registerer) *ec2.Client {
	return h.ec2.Client(ec2.Config{Registerer: reg})
}

// startManager (re)starts the tagger with o: the one place these tests
// build the operator's EC2 client and manager.
func (h *harness) startManager(o tagger.Options) {
	h.t.Helper()
	h.stopManager()
	logger := ctrl.Log.WithName(h.t.Name())
	if h.logger != nil {
		logger = *h.logger
	}
	// The manager's client keeps controller-runtime's default rate
	// limit: the operator's --kube-api-qps is a separate concern.
	cfg := rest.CopyConfig(shared.Env(h.t).Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	if h.kubeQPS > 0 {
		cfg.QPS, cfg.Burst = h.kubeQPS, int(2*h.kubeQPS)
	}
	var started ctrl.Manager
	// The operator's pod cache (stubs of pods with nothing of the
	// tagger's), in the test's namespace.
	if o.Policies == nil {
		var err error
		if o.Policies, err = tagger.NewPolicies(o.DefaultTags); err != nil {
			h.t.Fatal(err)
		}
	}
	podCache, newCache := tagger.PodCache(o)
	h.mgr = testenv.StartManager(h.t, cfg, ctrl.Options{
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}},
			ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: podCache}},
		NewCache: newCache,
		Logger:   logger,
	}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		o.Registerer = reg
		started = mgr
		state := ec2.NewState(h.ec2Client(reg))
		for _, sc := range h.scopes {
			if err := state.Watch(sc); err != nil {
				return err
			}
		}
		if err := mgr.Add(state); err != nil {
			return err
		}
		h.state = state
		var err error
		h.rec, err = tagger.Setup(mgr, state, o)
		return err
	})
	h.reg = h.mgr.Registry
	// Tests count EC2 calls from a started manager (the start-up
	// permission check is the operator's, not the tagger's).
	<-started.Elected()
	started.GetCache().WaitForCacheSync(context.Background())
	h.emu.ResetCounts()
}

func (h *harness) stopManager() {
	if h.mgr == nil {
		return
	}
	if err := h.mgr.Stop(); err != nil {
		h.t.Errorf("manager: %v", err)
	}
	h.mgr = nil
}

// pod creates a running pod with ip and annotations.
func (h *harness) pod(name, ip string, annotations map[string]string) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: annotations, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	status := corev1.PodStatus{}
	if ip != "" {
		status = testenv.Running(ip)
		status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if !testenv.CreatePod(h.t, h.k8s, p, status) {
		h.t.FailNow()
	}
	return p
}

func (h *harness) get(name string) *corev1.Pod {
	h.t.Helper()
	var p corev1.Pod
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &p); err != nil {
		h.t.Fatal(err)
	}
	return &p
}

func (h *harness) annotate(name, value string) {
	h.t.Helper()
	p := h.get(name)
	patch := client.MergeFrom(p.DeepCopy())
	if value == "" {
		delete(p.Annotations, tagger.DefaultAnnotationKey)
	} else {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[tagger.DefaultAnnotationKey] = value
	}
	if err := h.k8s.Patch(context.Background(), p, patch); err != nil {
		h.t.Fatal(err)
	}
}

func condition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == tagger.ConditionType {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until the pod's condition has reason and a
// message containing msg.
func (h *harness) waitCondition(name, reason, msg string) *corev1.PodCondition {
	h.t.Helper()
	var last *corev1.PodCondition
	h.eventually(fmt.Sprintf("pod %s condition %s %q", name, reason, msg), func() bool {
		last = condition(h.get(name))
		return last != nil && last.Reason == reason && strings.Contains(last.Message, msg)
	}, func() string { return fmt.Sprintf("last condition: %+v", last) })
	return last
}

// eventually waits up to 30s for ok; detail (optional) says what was
// seen, for the failure message.
func (h *harness) eventually(what string, ok func() bool, detail func() string) {
	h.t.Helper()
	testenv.Eventually(h.t, what, 30*time.Second, func() (bool, string) {
		if ok() {
			return true, ""
		}
		if detail == nil {
			return false, "-"
		}
		return false, detail()
	})
}

// calls returns the emulator's call count per action.
func (h *harness) calls() map[string]int { return h.ec2.Calls() }

func (h *harness) total() int { return h.ec2.TotalCalls() }

// eniTags reads an ENI's tags back through DescribeNetworkInterfaces
// with an independent client (a call the emulator counts: read the
// counters first).
func (h *harness) eniTags(id string) map[string]string { return h.ec2.ENI(h.t, id).Tags }

// metric sums every series of a metric in the manager's registry.
func (h *harness) metric(name string) float64 { return testenv.MetricValue(h.t, h.reg, name, nil) }

// labelled returns the value of the series of a metric whose label has
// value.
func (h *harness) labelled(name, label, value string) float64 {
	return testenv.MetricValue(h.t, h.reg, name, map[string]string{label: value})
}

func (h *harness) reconciles() float64 { return h.metric("eni_operator_tagger_reconciles_total") }

// events returns the reasons and notes of the events about a pod.
func (h *harness) events(name string) []string {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
		}
	}
	return out
}

func (h *harness) waitEvent(name, prefix string) {
	h.t.Helper()
	h.eventually("event "+prefix+" on "+name, func() bool {
		for _, e := range h.events(name) {
			if strings.HasPrefix(e, prefix) {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprint(h.events(name)) })
}

func lastApplied(p *corev1.Pod) map[string]string {
	var m map[string]string
	_ = json.Unmarshal([]byte(p.Annotations[tagger.LastAppliedTagsAnnotation]), &m)
	return m
}

// barePod creates a running pod with no labels and no annotations.
func (h *harness) barePod(name, ip string) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if !testenv.CreatePod(h.t, h.k8s, p, testenv.Running(ip)) {
		h.t.FailNow()
	}
	return p
}
