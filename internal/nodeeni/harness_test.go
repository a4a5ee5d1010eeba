package nodeeni_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/ec2/ec2test"
	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// TEST_LOG=1 shows the operator's logs.
	if os.Getenv("TEST_LOG") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		log.SetLogger(logr.Discard())
	}
	testenv.Main(m, &env)
}

// Intervals of the tests: short, so a whole scenario takes seconds.
const (
	resync      = 300 * time.Millisecond
	detachDelay = 100 * time.Millisecond
	waitFor     = 20 * time.Second
)

func scheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// harness is one test's world: an emulator with a VPC, the test's own
// cluster name and label, and a client of the shared API server.
type harness struct {
	t       *testing.T
	emu     *emulator.Emulator
	url     string
	vpc     string
	subnets map[string]string // name -> ID
	groups  map[string]string // name -> ID
	loaded  emulator.LoadResult
	k8s     client.Client
	cluster string
	label   string // every node and NodeENI selector of the test carries label=<test>
	// cfg is what the operator's manager connects with (default: admin).
	cfg *rest.Config
}

func newHarness(t *testing.T, extra emulator.World) *harness {
	t.Helper()
	emu := emulator.New(emulator.Options{DetachDelay: detachDelay})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	base := emulator.World{
		VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}, {Name: "other", CIDR: "10.1.0.0/16"}},
		Subnets: []emulator.SubnetSpec{
			{Name: "nodes-a", VPC: "main", CIDR: "10.0.0.0/20", AvailabilityZone: "us-east-1a"},
			{Name: "nodes-b", VPC: "main", CIDR: "10.0.16.0/20", AvailabilityZone: "us-east-1b"},
			{Name: "multus-a", VPC: "main", CIDR: "10.0.32.0/20", AvailabilityZone: "us-east-1a"},
			{Name: "multus-b", VPC: "main", CIDR: "10.0.48.0/20", AvailabilityZone: "us-east-1b"},
			{Name: "storage-a", VPC: "main", CIDR: "10.0.64.0/20", AvailabilityZone: "us-east-1a"},
			{Name: "elsewhere", VPC: "other", CIDR: "10.1.0.0/20", AvailabilityZone: "us-east-1a"},
		},
		SecurityGroups: []emulator.SecurityGroupSpec{{Name: "multus", VPC: "main"}, {Name: "storage", VPC: "main"}, {Name: "multus", VPC: "other"}},
	}
	res, err := emu.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, emu: emu, url: srv.URL, vpc: res.VPCs[0], subnets: map[string]string{}, groups: map[string]string{},
		cluster: "c-" + strings.ToLower(t.Name()), label: strings.ToLower(t.Name())}
	for i, s := range base.Subnets {
		h.subnets[s.Name] = res.Subnets[i]
	}
	for i, g := range base.SecurityGroups[:2] {
		h.groups[g.Name] = res.SecurityGroups[i]
	}
	if h.loaded, err = emu.Load(extra); err != nil {
		t.Fatal(err)
	}
	h.k8s, err = client.New(env.Config, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.cleanupKube)
	emu.ResetCounts()
	return h
}

// ec2Client is the operator's EC2 client pointed at the emulator, with
// limits that do not slow tests down.
func (h *harness) ec2Client() *ec2.Client {
	return ec2.NewFromAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(h.url),
	}, ec2.Config{VPCID: h.vpc, Buckets: ec2test.Unlimited(), MaxAttempts: 2, MaxBackoff: 20 * time.Millisecond,
		BatchIdle: 5 * time.Millisecond, BatchMaxWait: 20 * time.Millisecond})
}

func (h *harness) options() nodeeni.Options {
	return nodeeni.Options{
		ClusterName: h.cluster, ResyncInterval: resync, CatalogInterval: time.Minute, MinCatalogRefresh: 200 * time.Millisecond,
		DetachPollInterval: 50 * time.Millisecond, CollectorGracePeriod: time.Second, MaxConcurrentReconciles: 2,
	}
}

// manager is a running operator: the real controller-runtime manager with
// the NodeENI controller, inventory and collector.
type manager struct {
	cancel context.CancelFunc
	done   chan error
	reg    *prometheus.Registry
}

func (h *harness) start(o nodeeni.Options) *manager {
	h.t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	cfg := h.cfg
	if cfg == nil {
		cfg = env.Config
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme(h.t),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:     log.Log.WithName(h.label),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	state := ec2.NewState(h.ec2Client())
	if err := mgr.Add(state); err != nil {
		h.t.Fatal(err)
	}
	if err := nodeeni.Setup(mgr, state, o); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &manager{cancel: cancel, done: make(chan error, 1), reg: reg}
	go func() { m.done <- mgr.Start(ctx) }()
	h.t.Cleanup(m.stop)
	return m
}

// stop cancels the manager's context and waits for it to return, as a
// killed process would stop (nothing is flushed).
func (m *manager) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	<-m.done
}

func (h *harness) instance(i int) string { return h.loaded.Instances[i].ID }

// addNode creates a Node for an emulator instance, in a zone, with the
// test's label and more.
func (h *harness) addNode(name, instance, zone string, labels map[string]string) {
	h.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"test": h.label, corev1.LabelTopologyZone: zone}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", zone, instance)}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	if err := h.k8s.Create(context.Background(), n); err != nil {
		h.t.Fatal(err)
	}
}

// spec returns a NodeENI spec selecting the test's nodes.
func (h *harness) spec(extra map[string]string) v1alpha1.NodeENISpec {
	sel := map[string]string{"test": h.label}
	for k, v := range extra {
		sel[k] = v
	}
	return v1alpha1.NodeENISpec{NodeSelector: sel, DeviceIndex: 1}
}

func (h *harness) createNodeENI(name string, spec v1alpha1.NodeENISpec) *v1alpha1.NodeENI {
	h.t.Helper()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := h.k8s.Create(context.Background(), ne); err != nil {
		h.t.Fatal(err)
	}
	return ne
}

func (h *harness) get(name string) *v1alpha1.NodeENI {
	h.t.Helper()
	ne := &v1alpha1.NodeENI{}
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		h.t.Fatal(err)
	}
	return ne
}

// update changes a NodeENI's spec, retrying on conflicts.
func (h *harness) update(name string, f func(*v1alpha1.NodeENISpec)) {
	h.t.Helper()
	for i := 0; ; i++ {
		ne := h.get(name)
		f(&ne.Spec)
		err := h.k8s.Update(context.Background(), ne)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			h.t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds or the time is up; cond says what
// it saw, for the failure message.
func (h *harness) eventually(what string, timeout time.Duration, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %v; last seen: %s", what, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// enis lists the cluster's ENIs straight from the emulator (EC2 calls of
// the test's own, outside any measured window).
func (h *harness) enis() []ec2.ENI {
	h.t.Helper()
	list, err := h.ec2Client().ListENIs(context.Background(), ec2.Filter{Name: "tag:" + nodeeni.TagCluster, Values: []string{h.cluster}})
	if err != nil {
		h.t.Fatal(err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// ready waits until a NodeENI reports all its desired nodes ready and
// nothing in progress.
func (h *harness) ready(name string, nodes int) *v1alpha1.NodeENI {
	h.t.Helper()
	var ne *v1alpha1.NodeENI
	h.eventually(name+" ready", waitFor, func() (bool, string) {
		ne = h.get(name)
		if ne == nil {
			return false, "missing"
		}
		c := condition(ne, v1alpha1.ConditionReady)
		p := condition(ne, v1alpha1.ConditionProgressing)
		ok := c != nil && c.Status == metav1.ConditionTrue && c.Reason == nodeeni.ReasonAttached && p != nil && p.Status == metav1.ConditionFalse &&
			int(ne.Status.ReadyNodes) == nodes && int(ne.Status.DesiredNodes) == nodes && ne.Status.ObservedGeneration == ne.Generation
		return ok, fmt.Sprintf("status %+v", ne.Status)
	})
	return ne
}

func condition(ne *v1alpha1.NodeENI, t string) *metav1.Condition {
	for i := range ne.Status.Conditions {
		if ne.Status.Conditions[i].Type == t {
			return &ne.Status.Conditions[i]
		}
	}
	return nil
}

// calls returns the emulator's call count of an action.
func (h *harness) calls(action string) int { return h.emu.Counts()[action].Calls }

func (h *harness) totalCalls() (int, map[string]int) {
	total, by := 0, map[string]int{}
	for a, c := range h.emu.Counts() {
		total += c.Calls
		by[a] = c.Calls
	}
	return total, by
}

// terminate terminates an instance through the EC2 Query API (no SDK
// outside internal/ec2).
func (h *harness) terminate(instance string) {
	h.t.Helper()
	resp, err := http.PostForm(h.url, url.Values{"Action": {"TerminateInstances"}, "Version": {"2016-11-15"}, "InstanceId.1": {instance}})
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("TerminateInstances: HTTP %d", resp.StatusCode)
	}
}

// cleanupKube removes the test's NodeENIs (finalizers dropped: the
// test's manager is stopped by then) and nodes from the shared API server.
func (h *harness) cleanupKube() {
	ctx := context.Background()
	list := &v1alpha1.NodeENIList{}
	_ = h.k8s.List(ctx, list)
	for i := range list.Items {
		ne := &list.Items[i]
		if ne.Spec.NodeSelector["test"] != h.label {
			continue
		}
		if len(ne.Finalizers) > 0 {
			ne.Finalizers = nil
			_ = h.k8s.Update(ctx, ne)
		}
		_ = h.k8s.Delete(ctx, ne)
	}
	_ = h.k8s.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{"test": h.label})
}

// deleteNodeENI deletes a NodeENI and waits until it is gone (the
// finalizer released by the controller).
func (h *harness) deleteNodeENI(name string) {
	h.t.Helper()
	if err := h.k8s.Delete(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		h.t.Fatal(err)
	}
	h.eventually(name+" deleted", waitFor, func() (bool, string) {
		ne := h.get(name)
		if ne == nil {
			return true, ""
		}
		return false, fmt.Sprintf("finalizers %v status %+v", ne.Finalizers, ne.Status)
	})
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
