package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// soakSampleEvery is the soak's period (issue 18, part 5): 180 samples
// in 30 minutes, each reading the ledger's ConfigMaps whole.
const soakSampleEvery = 10 * time.Second

// The soak's drift bounds, per hour of churn at rate pods/s: a leak of
// soakLeakBytes per churned pod, or of one goroutine per
// soakLeakPodsPerGoroutine churned pods, would exceed them. Anything
// smaller is below what a 15-minute fit over a garbage-collected heap
// tells from noise.
const (
	soakLeakBytes            = 200
	soakLeakPodsPerGoroutine = 5000
	// The inventory re-reads the VPC every 5 minutes at the default
	// --eni-inventory-interval; a minute more is the slack of a refresh
	// paced by the rate limiter behind the churn's own calls.
	soakInventoryBound = 6 * time.Minute
)

// soakSampler records the soak's series every soakSampleEvery: the
// operator's RSS (/proc), Go heap in use and goroutines (the Go
// runtime's figures on its /metrics), the ledger's size (its ConfigMaps
// in the API server), pods Synced (a watch) and the inventory's age (the
// emulator's call log).
type soakSampler struct {
	b      *bed
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu                                       sync.Mutex
	x, rss, heap, goroutines                 []float64
	ledgerRecords, ledgerKiB, synced, invAge []float64
	marks                                    []figure.Mark
	churnFrom, churnTo                       float64 // seconds
	lastInventory, lastCall                  time.Time
	inventoryPages                           int
}

func (b *bed) startSoakSampler() *soakSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &soakSampler{b: b, start: time.Now(), cancel: cancel, done: make(chan struct{}), lastInventory: time.Now()}
	go func() {
		defer close(s.done)
		s.sample()
		every(ctx, soakSampleEvery, func(int) { s.sample() })
	}()
	b.t.Cleanup(s.halt)
	return s
}

// halt stops the sampler and waits for its last sample (again: nothing).
func (s *soakSampler) halt() {
	s.cancel()
	<-s.done
}

// mark labels this moment; "churn" and "churn stopped" bound the fits.
func (s *soakSampler) mark(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Since(s.start).Seconds()
	s.marks = append(s.marks, figure.Mark{X: at, Label: label})
	switch label {
	case "churn":
		s.churnFrom = at
	case "churn stopped":
		s.churnTo = at
	}
}

func (s *soakSampler) sample() {
	m, err := s.b.scrape()
	if err != nil {
		s.b.t.Logf("soak sampler: operator /metrics: %v", err)
		return
	}
	records, bytes, err := s.b.ledgerSize(context.Background())
	if err != nil {
		s.b.t.Logf("soak sampler: %v", err)
		return
	}
	rss := s.b.operatorRSS()
	synced := float64(s.b.pods.syncedCount(""))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.b.emu.Calls() {
		if c.Time.After(s.lastCall) {
			s.lastCall = c.Time
			if c.Code == "" && isInventoryPage(c.Action, c.Params) {
				s.lastInventory = c.Time
				s.inventoryPages++
			}
		}
	}
	s.x = append(s.x, time.Since(s.start).Seconds())
	s.rss = append(s.rss, rss)
	s.heap = append(s.heap, m["go_memstats_heap_inuse_bytes"]/(1<<20))
	s.goroutines = append(s.goroutines, m["go_goroutines"])
	s.ledgerRecords = append(s.ledgerRecords, float64(records))
	s.ledgerKiB = append(s.ledgerKiB, float64(bytes)/1024)
	s.synced = append(s.synced, synced)
	s.invAge = append(s.invAge, time.Since(s.lastInventory).Seconds())
	if len(s.x)%6 == 0 { // a line a minute, to follow a 30-minute run
		s.b.t.Logf("soak %4.0fs: RSS %.0f MiB, heap %.0f MiB, %.0f goroutines, ledger %d records (%d KiB), %.0f pods Synced, inventory %.0f s old",
			s.x[len(s.x)-1], rss, s.heap[len(s.heap)-1], m["go_goroutines"], records, bytes/1024, synced, s.invAge[len(s.invAge)-1])
	}
}

// isInventoryPage tells a page of the tagger's inventory, a read of the
// whole VPC: DescribeNetworkInterfaces filtered on the VPC (or subnets)
// only, naming no ENI.
func isInventoryPage(action string, params map[string][]string) bool {
	if action != "DescribeNetworkInterfaces" {
		return false
	}
	for k, v := range params {
		switch {
		case strings.HasPrefix(k, "NetworkInterfaceId"):
			return false
		case strings.HasPrefix(k, "Filter.") && strings.HasSuffix(k, ".Name") && v[0] != "vpc-id" && v[0] != "subnet-id":
			return false
		}
	}
	return true
}

// ledgerSize reads the tagger's ledger from its ConfigMaps
// (eni-tagger-cache-NN in the operator's namespace): records, and bytes
// of data.
func (b *bed) ledgerSize(ctx context.Context) (records, bytes int, err error) {
	var list corev1.ConfigMapList
	if err := b.k8s.List(ctx, &list, client.InNamespace(b.opsNS)); err != nil {
		return 0, 0, fmt.Errorf("listing the ledger's ConfigMaps: %w", err)
	}
	for _, cm := range list.Items {
		if !strings.HasPrefix(cm.Name, "eni-tagger-cache-") {
			continue
		}
		for k, v := range cm.Data {
			bytes += len(k) + len(v)
			var r struct {
				UID string `json:"uid"`
			}
			if json.Unmarshal([]byte(v), &r) == nil && r.UID == k {
				records++
			}
		}
	}
	return records, bytes, nil
}

// during is the samples of y taken in the second half of the churn
// (after its warm-up), with their times.
func (s *soakSampler) during(y []float64) (xs, ys []float64) {
	from := s.churnFrom + (s.churnTo-s.churnFrom)/2
	for i, x := range s.x {
		if x >= from && x <= s.churnTo {
			xs, ys = append(xs, x), append(ys, y[i])
		}
	}
	return xs, ys
}

// perHour is y's least-squares slope over the churn's second half, per
// hour.
func (s *soakSampler) perHour(y []float64) float64 {
	xs, ys := s.during(y)
	return figure.Slope(xs, ys, 0) * 3600
}

func (s *soakSampler) checks(ev soakEvidence, rate int) []figure.Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	memBound := float64(soakLeakBytes*rate*3600) / (1 << 20)
	grBound := float64(rate*3600) / soakLeakPodsPerGoroutine
	why := fmt.Sprintf("a leak of %d bytes per churned pod at %d pods/s", soakLeakBytes, rate)
	_, ages := s.during(s.invAge)
	return []figure.Check{
		figure.AtMost("RSS slope, churn's second half", s.perHour(s.rss), memBound, "MiB/h", why),
		figure.AtMost("Go heap in use slope, churn's second half", s.perHour(s.heap), memBound, "MiB/h", why),
		figure.AtMost("goroutines slope, churn's second half", s.perHour(s.goroutines), grBound, "/h",
			fmt.Sprintf("one goroutine leaked per %d churned pods at %d pods/s", soakLeakPodsPerGoroutine, rate)),
		figure.AtMost("oldest inventory, churn's second half", slices.Max(append([]float64{0}, ages...)), soakInventoryBound.Seconds(), "s",
			"--eni-inventory-interval (5m) + 1m"),
		figure.AtMost("ENIs with tags of a pod gone (emulator)", float64(ev.leftBehind), 0, "", "issue 18, part 5"),
		figure.AtMost("ENIs whose tags differ from their pod's annotation (emulator, API server)", float64(ev.wrongTags), 0, "", "issue 18, part 5"),
		figure.AtMost("NodeENI ENIs leaked: not attached to a selected node, or extra (emulator)", float64(ev.leaked), 0, "", "issue 18, part 5"),
		figure.AtMost("selected nodes without their ENI (emulator, API server)", float64(ev.missing), 0, "", "the NodeENI's spec"),
		figure.AtMost("|ledger records - living annotated pods| (API server)", float64(abs(ev.ledgerRecords-ev.livePods)), 0, "", "issue 18, part 5"),
	}
}

func abs(n int) int { return max(n, -n) }

func (s *soakSampler) charts() []figure.Chart {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := slices.Clone(s.x)
	series := func(name string, y []float64) figure.Series {
		return figure.Series{Name: name, X: x, Y: slices.Clone(y)}
	}
	out := []figure.Chart{
		{Title: "Soak: operator memory every 10 s (RSS from /proc, Go heap in use from the runtime)", YLabel: "MiB",
			Series: []figure.Series{series("RSS", s.rss), series("Go heap in use", s.heap)}},
		{Title: "Soak: operator goroutines (go_goroutines)", YLabel: "goroutines", Series: []figure.Series{series("goroutines", s.goroutines)}},
		{Title: "Soak: ledger records (ConfigMaps) and pods Synced (API server)", YLabel: "count",
			Series: []figure.Series{series("ledger records", s.ledgerRecords), series("pods Synced", s.synced)}},
		{Title: "Soak: ledger size (ConfigMaps' data)", YLabel: "KiB", Series: []figure.Series{series("ledger", s.ledgerKiB)}},
		{Title: "Soak: inventory age (since the last VPC-wide DescribeNetworkInterfaces page, emulator's log)", YLabel: "s",
			Series: []figure.Series{series("inventory age", s.invAge)}},
	}
	for i := range out {
		out[i].Marks = slices.Clone(s.marks)
	}
	return out
}

// soakEvidence is the soak's end state, from the emulator's ENIs and the
// API server's pods, nodes and ConfigMaps.
type soakEvidence struct {
	leftBehind, wrongTags, leaked, missing, nodeENIs, livePods, ledgerRecords int
	examples                                                                  []string
}

func (e soakEvidence) clean() bool {
	return e.leftBehind == 0 && e.wrongTags == 0 && e.leaked == 0 && e.missing == 0 && e.ledgerRecords == e.livePods
}

func (e soakEvidence) fail(t *testing.T) {
	if !e.clean() {
		t.Errorf("soak end state: %d ENIs with tags of pods gone, %d with wrong tags, %d NodeENI ENIs leaked, %d missing, "+
			"%d ledger records for %d living pods; %v", e.leftBehind, e.wrongTags, e.leaked, e.missing, e.ledgerRecords, e.livePods, e.examples)
	}
}

func (e *soakEvidence) example(format string, a ...any) {
	if len(e.examples) < 10 {
		e.examples = append(e.examples, fmt.Sprintf(format, a...))
	}
}

// settleSoak waits, after the churn, until the end state is clean or
// soakSettle passed, and returns it and how long it took.
func (b *bed) settleSoak(c *churn) (soakEvidence, time.Duration) {
	start := time.Now()
	for {
		ev, err := c.evidence(context.Background())
		switch {
		case err != nil:
			b.t.Logf("soak end state: %v", err)
		case ev.clean() || time.Since(start) > soakSettle:
			return ev, time.Since(start)
		}
		time.Sleep(soakSampleEvery)
	}
}

// evidence reads the end state: every pool ENI must carry exactly the
// tags of the pod on its IP (none when no pod is), every ENI of the
// operator's must be attached to a node its NodeENI selects, one each,
// and the ledger must hold one record per living pod.
func (c *churn) evidence(ctx context.Context) (soakEvidence, error) {
	var ev soakEvidence
	var pods corev1.PodList
	if err := c.b.k8s.List(ctx, &pods, client.InNamespace(c.b.ns)); err != nil {
		return ev, err
	}
	onIP := map[string]map[string]string{}
	for _, p := range pods.Items {
		onIP[p.Status.PodIP] = parseSoakTags(p.Annotations["eni-tagger.io/tags"])
	}
	ev.livePods = len(pods.Items)
	// Two filtered reads (the pool, the NodeENI's): an unfiltered one
	// would pass for an inventory page in the call log.
	enis, err := c.list(ctx, ec2.Filter{Name: "interface-type", Values: []string{"branch"}})
	if err != nil {
		return ev, err
	}
	ours, err := c.list(ctx, ec2.Filter{Name: "tag-key", Values: []string{"eni-operator.io/cluster"}})
	if err != nil {
		return ev, err
	}
	enis = append(enis, ours...)
	selected, err := c.selectedInstances(ctx)
	if err != nil {
		return ev, err
	}
	attached := map[string]int{}
	for _, e := range enis {
		switch {
		case e.InterfaceType == "branch":
			ev.checkPodENI(e, onIP, c.b.emu.Calls)
		case e.Tags["eni-operator.io/cluster"] != "":
			ev.nodeENIs++
			if e.Status != "in-use" || e.Attachment == nil || !selected[e.Attachment.InstanceID] || attached[e.Attachment.InstanceID] > 0 {
				ev.leaked++
				ev.example("NodeENI ENI %s: %s, attachment %+v", e.ID, e.Status, e.Attachment)
				continue
			}
			attached[e.Attachment.InstanceID]++
		}
	}
	for inst := range selected {
		if attached[inst] == 0 {
			ev.missing++
			ev.example("selected instance %s has no ENI of the NodeENI", inst)
		}
	}
	ev.ledgerRecords, _, err = c.b.ledgerSize(ctx)
	return ev, err
}

// checkPodENI checks a pool ENI: with a pod on its IP, exactly the
// pod's annotation and the tagger's ownership token (its value is the
// operator's own digest, so only its presence is checked); with none,
// no tags at all, the token included (a stale token makes the next pod
// on the ENI a Conflict). The first ENI of each kind found wrong gets
// its tag writes from the emulator's call log as an example.
func (e *soakEvidence) checkPodENI(n awstypes.ENI, onIP map[string]map[string]string, calls func() []emulator.Call) {
	want, onPod := onIP[n.PrimaryIP]
	got := maps.Clone(n.Tags)
	_, token := got[tagger.HashTag]
	delete(got, tagger.HashTag)
	switch {
	case onPod && (!token || !maps.Equal(got, want)):
		e.wrongTags++
		if e.wrongTags <= 3 {
			e.example("%s (%s): tags %v, pod's annotation %v; %s", n.ID, n.PrimaryIP, n.Tags, want, tagHistory(n.ID, calls()))
		}
	case !onPod && len(n.Tags) > 0:
		e.leftBehind++
		if e.leftBehind <= 3 {
			e.example("%s (%s): tags %v and no pod; %s", n.ID, n.PrimaryIP, n.Tags, tagHistory(n.ID, calls()))
		}
	}
}

// tagHistory is the successful CreateTags and DeleteTags calls naming
// id in the emulator's log (its last 20,000 calls), with their keys.
func tagHistory(id string, calls []emulator.Call) string {
	var out []string
	for _, c := range calls {
		if (c.Action != "CreateTags" && c.Action != "DeleteTags") || c.Code != "" || !slices.ContainsFunc(slices.Collect(maps.Values(c.Params)),
			func(v []string) bool { return len(v) > 0 && v[0] == id }) {
			continue
		}
		var tags []string
		for k, v := range c.Params {
			if strings.HasPrefix(k, "Tag.") {
				tags = append(tags, strings.TrimPrefix(k, "Tag.")+"="+v[0])
			}
		}
		slices.Sort(tags)
		out = append(out, fmt.Sprintf("%s %s %v", c.Time.Format("15:04:05.000"), c.Action, tags))
	}
	return "tag writes: " + strings.Join(out, "; ")
}

// selectedInstances are the instances of the nodes the NodeENI selects
// now, from the API server.
func (c *churn) selectedInstances(ctx context.Context) (map[string]bool, error) {
	var nodes corev1.NodeList
	if err := c.b.k8s.List(ctx, &nodes); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range nodes.Items {
		if n.Labels[soakNodeLabel] == "multus" {
			out[n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]] = true
		}
	}
	return out, nil
}
