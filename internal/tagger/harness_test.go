package tagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	testenv.Main(m, &env)
}

var nsSeq atomic.Int64

// harness is one test's world: an emulator over HTTP, a namespace for
// pods, one for the operator's ledger, and a manager running the tagger.
type harness struct {
	t      *testing.T
	emu    *emulator.Emulator
	url    string
	vpc    string
	subnet string
	loaded emulator.LoadResult
	k8s    client.Client
	ns     string
	opsNS  string
	scheme *runtime.Scheme

	// logger, when set, is the manager's logger (tests that read the log).
	logger *logr.Logger

	stop chan struct{}
	done chan struct{}
	rec  *tagger.Reconciler
	reg  *prometheus.Registry
}

func newHarness(t *testing.T, extra emulator.World) *harness {
	t.Helper()
	emu, url := testenv.Serve(t, emulator.Options{DetachDelay: 50 * time.Millisecond})
	base, err := emu.Load(emulator.World{
		VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}},
		Subnets: []emulator.SubnetSpec{
			{Name: "a", VPC: "main", CIDR: "10.0.0.0/18", AvailabilityZone: "us-east-1a", IPv6CIDR: "2600:1f18::/64"},
			{Name: "b", VPC: "main", CIDR: "10.0.64.0/18", AvailabilityZone: "us-east-1b"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, emu: emu, url: url, vpc: base.VPCs[0], subnet: base.Subnets[0]}
	if h.loaded, err = emu.Load(extra); err != nil {
		t.Fatal(err)
	}
	h.scheme = runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(h.scheme)
	direct := rest.CopyConfig(env.Config)
	direct.QPS, direct.Burst = 1000, 2000
	if h.k8s, err = client.New(direct, client.Options{Scheme: h.scheme}); err != nil {
		t.Fatal(err)
	}
	n := nsSeq.Add(1)
	h.ns, h.opsNS = fmt.Sprintf("apps-%d", n), fmt.Sprintf("ops-%d", n)
	for _, ns := range []string{h.ns, h.opsNS} {
		if err := h.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	emu.ResetCounts()
	t.Cleanup(h.stopManager)
	return h
}

// options are the defaults tests start from: fast batching, no per-pod
// rate limit, no inventory unless a test wants one.
func (h *harness) options() tagger.Options {
	o := tagger.DefaultOptions()
	o.Namespace = h.opsNS
	o.CacheBatchInterval = 100 * time.Millisecond
	o.PodRateLimitQPS = 0
	o.InventoryInterval = 0
	o.SkipNameValidation = true
	return o
}

func (h *harness) ec2Client(reg prometheus.Registerer) *ec2.Client {
	return testenv.EC2Client(h.url, ec2.Config{VPCID: h.vpc, Registerer: reg})
}

func (h *harness) startManager(o tagger.Options) {
	h.t.Helper()
	h.stopManager()
	h.reg = prometheus.NewRegistry()
	o.Registerer = h.reg
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000 // the operator's --kube-api-qps is a separate concern
	logger := ctrl.Log.WithName(h.t.Name())
	if h.logger != nil {
		logger = *h.logger
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 h.scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}},
			ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: tagger.TrimPod(o.AnnotationKey)}}},
		Logger: logger,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if h.rec, err = tagger.Setup(mgr, h.ec2Client(h.reg), o); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go func() { <-h.stop; cancel() }()
	go func() {
		defer close(h.done)
		if err := mgr.Start(ctx); err != nil {
			h.t.Errorf("manager: %v", err)
		}
	}()
	// The startup permission check makes DryRun calls; tests count from
	// after it.
	h.eventually("the permission check", func() bool {
		return h.series("eni_operator_tagger_permission_missing") == len(tagger.RequiredIAMActions)
	}, nil)
	h.emu.ResetCounts()
}

// series counts the series of a metric.
func (h *harness) series(name string) int {
	mfs, _ := h.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

func (h *harness) stopManager() {
	if h.stop == nil {
		return
	}
	close(h.stop)
	<-h.done
	h.stop = nil
}

// pod creates a running pod with ip and annotations.
func (h *harness) pod(name, ip string, annotations map[string]string) *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: annotations, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	if err := h.k8s.Create(context.Background(), p); err != nil {
		h.t.Fatal(err)
	}
	if ip != "" {
		// A patch, not an update: the operator may have written the pod
		// since it was created (a condition, a finalizer).
		unset := p.DeepCopy()
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := h.k8s.Status().Patch(context.Background(), p, client.StrategicMergeFrom(unset)); err != nil {
			h.t.Fatal(err)
		}
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

func (h *harness) eventually(what string, ok func() bool, detail func() string) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			d := ""
			if detail != nil {
				d = detail()
			}
			h.t.Fatalf("timed out waiting for %s; %s", what, d)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// calls returns the emulator's call count per action.
func (h *harness) calls() map[string]int {
	out := map[string]int{}
	for a, c := range h.emu.Counts() {
		out[a] = c.Calls
	}
	return out
}

func (h *harness) total() int {
	n := 0
	for _, c := range h.calls() {
		n += c
	}
	return n
}

// eniTags reads an ENI's tags back through DescribeNetworkInterfaces
// with an independent client (a call the emulator counts: read the
// counters first).
func (h *harness) eniTags(id string) map[string]string {
	h.t.Helper()
	e, err := h.ec2Client(nil).GetENI(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return e.Tags
}

// metric sums every series of a metric in the manager's registry.
func (h *harness) metric(name string) float64 {
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return n
}

// labelled returns the value of the series of a metric whose (first)
// label has value.
func (h *harness) labelled(name, value string) float64 {
	mfs, _ := h.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == value {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
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
