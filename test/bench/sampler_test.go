package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/test/bench/measure"
)

// sampler records a bed's time series, once a second, from evidence
// outside the operator: the emulator's call log (EC2 calls by family,
// ENIs given tags), a watch on the pods (Synced), the kube-apiserver's
// own request counter (Kubernetes writes) and /proc (the operator's
// RSS).
type sampler struct {
	b     *bed
	start time.Time
	api   rest.Interface // the apiserver's own paths (/metrics)
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	x        []float64            // seconds since start
	synced   []float64            // pods Synced
	tagged   []float64            // ENIs given tags
	rss      []float64            // MiB; 0 while no operator runs
	writes   map[string][]float64 // resource -> cumulative writes not the bench's
	ec2      map[string][]float64 // family -> cumulative calls
	marks    []figure.Mark
	lastCall time.Time
	taggedAt map[string]time.Time // ENI -> first successful CreateTags naming it
	calls    map[string]float64   // family -> calls so far
	apiStart map[string]float64   // the apiserver's write counters at start
	lastAPI  map[string]float64   // and at the last sample, minus the bench's own
}

// sampleEvery is the sampler's period: fine enough to see a 2 s
// plateau, coarse enough that reading the apiserver's /metrics (a few
// MB) does not load the machine under test.
const sampleEvery = time.Second

func (b *bed) startSampler() {
	cs, err := kubernetes.NewForConfig(shared.Env(b.t).Config)
	if err != nil {
		b.t.Fatal(err)
	}
	s := &sampler{b: b, start: time.Now(), api: cs.Discovery().RESTClient(), stop: make(chan struct{}), done: make(chan struct{}),
		writes: map[string][]float64{}, ec2: map[string][]float64{}, taggedAt: map[string]time.Time{}, calls: map[string]float64{}}
	if s.apiStart, err = s.apiWrites(); err != nil {
		b.t.Fatal(err)
	}
	b.sampler = s
	go s.run()
	b.t.Cleanup(s.halt)
}

func (s *sampler) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
		<-s.done
	}
}

func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// mark labels this moment on the charts.
func (s *sampler) mark(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, figure.Mark{X: time.Since(s.start).Seconds(), Label: label})
}

func (s *sampler) sample() {
	s.refreshAPI()
	rss := s.b.operatorRSS()
	synced := float64(s.b.pods.syncedCount(""))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readCalls()
	s.x = append(s.x, time.Since(s.start).Seconds())
	s.synced = append(s.synced, synced)
	s.tagged = append(s.tagged, float64(len(s.taggedAt)))
	s.rss = append(s.rss, rss)
	byRes := map[string]float64{}
	for k, v := range s.lastAPI {
		byRes[measure.WriteGroup(k)] += v
	}
	measure.AppendAll(s.writes, byRes, len(s.x))
	measure.AppendAll(s.ec2, s.calls, len(s.x))
}

// refreshAPI reads the apiserver's write counters into lastAPI, less
// their values at start and the bench's own writes.
func (s *sampler) refreshAPI() {
	api, err := s.apiWrites()
	if err != nil {
		s.b.t.Logf("sampler: %v", err)
		return
	}
	own := s.b.own.snapshot()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAPI = map[string]float64{}
	for k, v := range api {
		if d := v - s.apiStart[k] - own[k]; d > 0 {
			s.lastAPI[k] = d
		}
	}
}

// readCalls takes the calls recorded since the last sample: their
// family, and the ENIs a successful CreateTags named. The emulator's log
// may have been emptied (ResetCounts) or trimmed since; calls are told
// apart by time.
func (s *sampler) readCalls() {
	for _, c := range s.b.emu.Calls() {
		if !c.Time.After(s.lastCall) {
			continue
		}
		s.lastCall = c.Time
		s.calls[measure.EC2Family(c.Action, c.Params)]++
		if c.Action != "CreateTags" || c.Code != "" {
			continue
		}
		for k, v := range c.Params {
			if strings.HasPrefix(k, "ResourceId.") {
				if _, ok := s.taggedAt[v[0]]; !ok {
					s.taggedAt[v[0]] = c.Time
				}
			}
		}
	}
}

// apiWrites reads the kube-apiserver's apiserver_request_total and sums
// its writes by "VERB resource[/subresource]".
func (s *sampler) apiWrites() (map[string]float64, error) {
	body, err := s.api.Get().AbsPath("/metrics").Stream(context.Background())
	if err != nil {
		return nil, fmt.Errorf("GET /metrics of the apiserver: %w", err)
	}
	defer func() { _ = body.Close() }()
	return measure.RequestTotals(body)
}

// operatorRSS is the operator process's resident set in MiB, 0 when
// none runs.
func (b *bed) operatorRSS() float64 {
	pid := b.operatorPID()
	if pid == 0 {
		return 0
	}
	return procStatusBytes(pid, "VmRSS") / (1 << 20)
}

// charts are the sampler's series so far as the report's charts.
func (s *sampler) charts() []figure.Chart {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := slices.Clone(s.x)
	out := []figure.Chart{}
	if slices.Max(append([]float64{0}, s.synced...)) > 0 || slices.Max(append([]float64{0}, s.tagged...)) > 0 {
		out = append(out, figure.Chart{Title: "Pods Synced and ENIs tagged", YLabel: "count",
			Series: []figure.Series{{Name: "pods Synced", X: x, Y: slices.Clone(s.synced)}, {Name: "ENIs tagged", X: x, Y: slices.Clone(s.tagged)}}})
	}
	out = append(out,
		figure.Chart{Title: "EC2 calls per second by family (emulator's log)", YLabel: "calls/s", Series: rates(x, s.ec2)},
		figure.Chart{Title: "Kubernetes writes per second (kube-apiserver, less the bench's own)", YLabel: "writes/s", Series: rates(x, s.writes)},
		figure.Chart{Title: "Operator RSS", YLabel: "MiB", Series: []figure.Series{{Name: "RSS", X: x, Y: slices.Clone(s.rss)}}})
	for i := range out {
		out[i].Marks = slices.Clone(s.marks)
	}
	return out
}

func rates(x []float64, cumulative map[string][]float64) []figure.Series {
	var out []figure.Series
	for _, k := range slices.Sorted(maps.Keys(cumulative)) {
		r := figure.PerSecond(x, cumulative[k])
		r.Name = k
		out = append(out, r)
	}
	return out
}

// opWrites is the apiserver's writes since the sampler started that
// were not the bench's, by "VERB resource", as of the last sample.
func (s *sampler) opWrites() (map[string]float64, float64) {
	s.refreshAPI()
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0.0
	for _, v := range s.lastAPI {
		total += v
	}
	return maps.Clone(s.lastAPI), total
}

// peakRSS is the operator's largest resident set sampled so far, in MiB.
func (s *sampler) peakRSS() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Max(append([]float64{0}, s.rss...))
}

// tagTimes is when each ENI first got tags (a successful CreateTags).
func (s *sampler) tagTimes() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readCalls()
	return maps.Clone(s.taggedAt)
}

// ownWrites counts the bench's own Kubernetes writes by "VERB resource",
// to tell them from the operator's in the apiserver's counter.
type ownWrites struct {
	mu sync.Mutex
	n  map[string]float64
}

func (o *ownWrites) add(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[key]++
}

func (o *ownWrites) snapshot() map[string]float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.n)
}

// podWatch follows the figure's pods through a watch: when each was
// first seen Synced, without listing thousands of pods every poll.
type podWatch struct {
	mu       sync.Mutex
	syncedAt map[string]time.Time
}

func (b *bed) watchPods() {
	cfg := rest.CopyConfig(shared.Env(b.t).Config)
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	pods := cs.CoreV1().Pods(b.ns)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
	}
	b.pods = &podWatch{syncedAt: map[string]time.Time{}}
	seen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && isSynced(p) {
			b.pods.see(p.Name)
		}
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }, DeleteFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				b.pods.forget(p.Name)
			}
		}},
		// Only what the bench reads: 10,000 whole pods would load the
		// machine under test.
		Transform: func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion},
					Status: corev1.PodStatus{Conditions: p.Status.Conditions}}, nil
			}
			return obj, nil
		}})
	stop := make(chan struct{})
	go ctrl.Run(stop)
	b.t.Cleanup(func() { close(stop) })
}

func isSynced(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "eni-tagger.io/tagged" && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (w *podWatch) see(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.syncedAt[name]; !ok {
		w.syncedAt[name] = time.Now()
	}
}

func (w *podWatch) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.syncedAt, name)
}

// syncedCount counts the Synced pods whose name starts with prefix.
func (w *podWatch) syncedCount(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name := range w.syncedAt {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// lastSynced is when the last of the pods with prefix was first seen
// Synced.
func (w *podWatch) lastSynced(prefix string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for name, at := range w.syncedAt {
		if strings.HasPrefix(name, prefix) && at.After(last) {
			last = at
		}
	}
	return last
}
