// Package bench measures the figures of `make bench` (docs/benchmarks.md) against
// envtest and the emulator with AWS's token buckets on and 50 ms of
// latency per EC2 call, with the operator as a separate process at its
// default flags. The figures are skipped unless ENI_BENCH is set; each
// writes bench/results/<figure>.json, and hack/bench-report turns those
// into the Markdown report.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/test/bench/measure"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

func TestMain(m *testing.M) {
	if os.Getenv("ENI_BENCH") == "" {
		fmt.Println("bench: figures skipped; run them with `make bench` (ENI_BENCH=1)")
		os.Exit(0)
	}
	testenv.Main(m, &shared)
}

// bed is one figure's test bed: the emulator (throttled, 50 ms per call),
// namespaces, a client, and the operator process.
type bed struct {
	t      *testing.T
	env    *testenv.EC2
	emu    *emulator.Emulator
	loaded emulator.LoadResult // of the figure's world
	k8s    client.Client
	kcfg   string
	ns     string // the figure's pods
	opsNS  string // the operator's namespace (its ledger)
	op     *testenv.Process
	opPID  atomic.Int64 // the running operator's, 0 when none
	mAddr  string

	own     *ownWrites // the bench's Kubernetes writes
	pods    *podWatch
	sampler *sampler
}

// newBed loads w into the default world (which opts change).
func newBed(t *testing.T, w emulator.World, opts ...testenv.WorldOption) *bed {
	e := testenv.NewEC2(t, emulator.Options{Throttling: true, Latency: 50 * time.Millisecond, DetachDelay: 2 * time.Second, Seed: 3},
		testenv.DefaultWorld(opts...))
	b := &bed{t: t, env: e, emu: e.Emulator, loaded: e.Load(t, w)}
	cfg := rest.CopyConfig(shared.Env(t).Config)
	cfg.QPS, cfg.Burst = 2000, 4000 // 32 pods created at a time, each created and patched
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.own = &ownWrites{n: map[string]float64{}}
	b.k8s = b.counting(c)
	// Each figure has namespaces of its own, and its pods go with it:
	// envtest runs no namespace controller, and a pod left behind would be
	// tagged again by the next figure's operator.
	short := strings.ToLower(strings.TrimPrefix(t.Name(), "TestFigure"))
	b.ns, b.opsNS = "bench-"+short, "eni-"+short
	testenv.CreateNamespaces(t, b.k8s, b.ns, b.opsNS)
	t.Cleanup(b.removePods)
	b.kcfg = testenv.WriteKubeconfig(t, shared.Env(t).Config)
	b.emu.ResetCounts()
	b.watchPods()
	b.startSampler()
	return b
}

// operatorBinary builds cmd/eni-operator once per run.
func operatorBinary(t *testing.T) string {
	if p := os.Getenv("ENI_OPERATOR_BIN"); p != "" {
		return p
	}
	out := filepath.Join(os.TempDir(), "eni-operator-bench")
	testenv.BuildCommand(t, "./cmd/eni-operator", out)
	return out
}

// startOperator runs the operator binary at its defaults (plus the
// settings any deployment has: VPC, cluster name, where AWS is).
func (b *bed) startOperator(extra ...string) {
	b.t.Helper()
	b.mAddr = testenv.FreeAddr(b.t)
	args := append([]string{"--vpc-id=" + b.env.VPC, "--cluster-name=bench", "--metrics-bind-address=" + b.mAddr,
		// The harness scrapes plain HTTP on loopback; production serves
		// /metrics over HTTPS to authorised readers only.
		"--metrics-secure=false",
		"--health-probe-bind-address=" + testenv.FreeAddr(b.t), "--zap-log-level=error"}, extra...)
	env := []string{"KUBECONFIG=" + b.kcfg, "POD_NAMESPACE=" + b.opsNS}
	for k, v := range testenv.AWSEnv(b.env.URL) {
		env = append(env, k+"="+v)
	}
	label := "operator started"
	if b.op != nil {
		label = "operator restarted"
	}
	b.sampler.mark(label)
	b.op = testenv.StartProcess(b.t, "operator", operatorBinary(b.t), env, args...)
	b.opPID.Store(int64(b.op.Pid()))
	b.waitFor("operator metrics endpoint", 2*time.Minute, func() bool { _, err := b.scrape(); return err == nil })
}

// scrape reads the operator's /metrics into name{labels} -> value.
func (b *bed) scrape() (map[string]float64, error) {
	return testenv.Scrape("http://" + b.mAddr + "/metrics")
}

// limiterWaits is the operator's client-side rate-limit waits by
// throttling family, as its /metrics has them now.
func (b *bed) limiterWaits() string {
	m, err := b.scrape()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return measure.LimiterWaits(m)
}

// sum adds the series of a metric family.
func sum(m map[string]float64, name string) float64 {
	var n float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			n += v
		}
	}
	return n
}

func (b *bed) waitFor(what string, timeout time.Duration, ok func() bool) time.Duration {
	b.t.Helper()
	// Every 200 ms: a look lists thousands of pods, or scrapes the operator.
	return testenv.EventuallyEvery(b.t, what, timeout, 200*time.Millisecond, func() (bool, string) { return ok(), "-" })
}

// removePods deletes the figure's pods and waits until none is left: one
// delete-collection of 20,000 pods can time out half done, and a pod left
// behind, its IP unknown to the next figure's emulator, would be looked up
// by the next figure's operator.
func (b *bed) removePods() {
	ctx := context.Background()
	b.waitFor("the pods of "+b.ns+" to be deleted", 5*time.Minute, func() bool {
		_ = b.k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(b.ns), client.GracePeriodSeconds(0))
		var left corev1.PodList
		if err := b.k8s.List(ctx, &left, client.InNamespace(b.ns), client.Limit(1)); err != nil {
			return false
		}
		return len(left.Items) == 0
	})
}

// operatorPID is the running operator's process id, 0 when none runs.
func (b *bed) operatorPID() int { return int(b.opPID.Load()) }

// counting wraps c so that each write it makes is counted by "VERB
// resource", the apiserver's names for it.
func (b *bed) counting(c client.WithWatch) client.Client {
	scheme := c.Scheme()
	res := func(obj runtime.Object, sub string) string {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return "unknown"
		}
		r := strings.ToLower(gvk.Kind) + "s"
		if sub != "" {
			r += "/" + sub
		}
		return r
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
			b.own.add("POST " + res(obj, ""))
			return c.Create(ctx, obj, o...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			b.own.add("PUT " + res(obj, ""))
			return c.Update(ctx, obj, o...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			b.own.add("PATCH " + res(obj, ""))
			return c.Patch(ctx, obj, p, o...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
			b.own.add("DELETE " + res(obj, ""))
			return c.Delete(ctx, obj, o...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteAllOfOption) error {
			b.own.add("DELETECOLLECTION " + res(obj, ""))
			return c.DeleteAllOf(ctx, obj, o...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, o ...client.SubResourceUpdateOption) error {
			b.own.add("PUT " + res(obj, sub))
			return c.SubResource(sub).Update(ctx, obj, o...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
			b.own.add("PATCH " + res(obj, sub))
			return c.SubResource(sub).Patch(ctx, obj, p, o...)
		},
	})
}

// ec2 is a client of the bed's own (not the operator's), without retries,
// so each of its reads is one call.
func (b *bed) ec2() *ec2.Client {
	return b.env.Client(ec2.Config{MaxAttempts: 1, QPS: 1000, Burst: 1000})
}

// calls returns the emulator's calls per action and their total.
func (b *bed) calls() (map[string]int, int) { return b.env.Calls(), b.env.TotalCalls() }

// callShapes counts the recorded calls of one action by the names of
// their parameters and filters (values aside): who made them shows in the
// shape, e.g. an inventory page filtered on a tag or a lookup by ID.
func (b *bed) callShapes(action string) map[string]int {
	out := map[string]int{}
	for _, c := range b.emu.Calls() {
		if c.Action != action {
			continue
		}
		var parts []string
		for k, v := range c.Params {
			switch {
			case strings.HasSuffix(k, ".Name"):
				parts = append(parts, "filter "+v[0])
			case strings.Contains(k, ".Value.") || k == "Action" || k == "Version" || k == "NextToken":
			default:
				parts = append(parts, strings.TrimRight(k, ".0123456789"))
			}
		}
		sort.Strings(parts)
		out[strings.Join(slices.Compact(parts), ", ")]++
	}
	return out
}

// createPods creates pods in parallel; ann(i) gives pod i's annotations
// (nil for none) and ip(i) its IP. It returns when each pod got its IP.
func (b *bed) createPods(prefix string, n int, ann func(int) map[string]string, ip func(int) string) []time.Time {
	ipAt := make([]time.Time, n)
	testenv.InParallel(n, 32, func(i int) {
		b.createPod(fmt.Sprintf("%s-%05d", prefix, i), ann(i), ip(i))
		ipAt[i] = time.Now()
	})
	return ipAt
}

func (b *bed) createPod(name string, ann map[string]string, ip string) {
	testenv.CreatePod(b.t, b.k8s, b.newPod(name, ann), testenv.Running(ip))
}

// newPod is a pod of the figure's namespace with one container whose
// environment makes it about the size of a real one.
func (b *bed) newPod(name string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns, Annotations: ann},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Env: []corev1.EnvVar{{Name: "A", Value: strings.Repeat("x", 200)}}}}}}
}

// envInt is a figure's size from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a whole number >= 1", name, v)
	}
	return n
}

// synced counts the pods named prefix-* whose tagged condition is True.
func (b *bed) synced(prefix string) int { return b.pods.syncedCount(prefix + "-") }

// percentile of durations (p in [0,100]).
func percentile(ds []time.Duration, p float64) time.Duration { return figure.Percentile(ds, p) }

// Figure is one figure of the report, in bench-report's format.
type Figure = figure.Figure

func (b *bed) write(f Figure) {
	f.Charts = append(f.Charts, b.sampler.charts()...)
	f.Machine = map[string]any{"cores": goruntime.NumCPU(), "goos": goruntime.GOOS, "goarch": goruntime.GOARCH,
		"emulator": "AWS token buckets on, 50ms latency per call", "date": time.Now().UTC().Format(time.RFC3339)}
	dir := os.Getenv("BENCH_OUT")
	if dir == "" {
		root, _ := testenv.RepoRoot()
		dir = filepath.Join(root, "bench", "results")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	raw, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, f.Name+".json"), raw, 0o644); err != nil {
		b.t.Fatal(err)
	}
	f.Charts = nil // in the file; too long for the log
	raw, _ = json.MarshalIndent(f, "", "  ")
	b.t.Logf("%s: %s", f.Name, raw)
}
