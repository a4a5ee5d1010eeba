package tagger_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// TestMeasureBurstTail measures (never asserts) the time from a pod's IP
// to its ENI's tags in a burst of pods created without an IP and given
// one moments later, as a kubelet does, with the operator's defaults
// (per-pod rate limit, --kube-api-qps 100) against a throttling emulator.
// TAGGER_BURST_PODS=2000 runs it.
func TestMeasureBurstTail(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TAGGER_BURST_PODS"))
	if n <= 0 {
		t.Skip("a measurement: TAGGER_BURST_PODS=<pods> runs it")
	}
	h := newHarness(t, branchWorld(n))
	on, lat := true, emulator.Duration{Duration: 50 * time.Millisecond}
	if err := h.emu.Configure(emulator.Config{Throttling: &on, Latency: &lat}); err != nil {
		t.Fatal(err)
	}
	o := tagger.DefaultOptions()
	o.Namespace, o.SkipNameValidation = h.opsNS, true
	h.kubeQPS = 100
	h.startManager(o)
	h.eventually("first inventory", func() bool { return h.calls()["DescribeNetworkInterfaces"] > 0 }, nil)
	time.Sleep(time.Second)
	h.emu.ResetCounts()
	ipAt := make([]time.Time, n)
	start := time.Now()
	testenv.InParallel(n, 32, func(i int) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: h.ns,
			Annotations: map[string]string{tagger.DefaultAnnotationKey: fmt.Sprintf("App=app-%d,Team=t-%d", i%20, i%5)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if testenv.CreatePod(t, h.k8s, p, testenv.Running(h.loaded.NetworkInterfaces[i].PrivateIP)) {
			ipAt[i] = time.Now()
		}
	})
	created := time.Since(start)
	recorded := testenv.EventuallyEvery(t, "all tagged", 15*time.Minute, 500*time.Millisecond, func() (bool, string) {
		got := h.metric(`eni_operator_tagger_cache_entries`)
		return got == float64(n), fmt.Sprint(got)
	})
	index := map[string]int{}
	for i, e := range h.loaded.NetworkInterfaces {
		index[e.ID] = i
	}
	var lats []time.Duration
	var at []time.Time
	// Per tag set: when its calls went, to tell a starved set from a
	// budget shared fairly.
	setCalls := map[string][]time.Time{}
	throttled := 0
	for _, c := range h.emu.Calls() {
		if c.Action == "CreateTags" && c.Code != "" {
			throttled++
		}
		if c.Action != "CreateTags" || c.Code != "" {
			continue
		}
		set := fmt.Sprint(c.Params["Tag.1.Value"], c.Params["Tag.2.Value"], c.Params["Tag.3.Value"])
		setCalls[set] = append(setCalls[set], c.Time)
		for k, v := range c.Params {
			if i, ok := index[v[0]]; ok && strings.HasPrefix(k, "ResourceId.") && !ipAt[i].IsZero() {
				lats = append(lats, c.Time.Sub(ipAt[i]))
				at = append(at, c.Time)
			}
		}
	}
	slices.Sort(lats)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	var plateau time.Duration
	// Before the last tags landed, some pod with an IP was waiting.
	for i := 1; i < len(at); i++ {
		plateau = max(plateau, at[i].Sub(at[i-1]))
	}
	var worstGap time.Duration
	for _, ts := range setCalls {
		for i := 1; i < len(ts); i++ {
			worstGap = max(worstGap, ts[i].Sub(ts[i-1]))
		}
	}
	t.Logf("%d tag sets; longest gap between two calls of one set %v; %d CreateTags throttled", len(setCalls), worstGap, throttled)
	results := map[string]float64{}
	for _, r := range []string{"success", "requeue", "error"} {
		results[r] = h.labelled("eni_operator_tagger_reconciles_total", "result", r)
	}
	reasons := map[string]float64{}
	for _, r := range []string{tagger.ReasonSynced, tagger.ReasonAWSError, tagger.ReasonENINotFound} {
		reasons[r] = h.labelled("eni_operator_tagger_pod_outcomes_total", "reason", r)
	}
	t.Logf("reconciles %v; outcomes %v; every pod recorded (annotations, condition) %v after the first was created; the --kube-api-qps bound for 2 writes per pod: %v",
		results, reasons, (created + recorded).Round(time.Second), time.Duration(2*n/100)*time.Second)
	pct := func(p int) time.Duration { return lats[min(len(lats)-1, len(lats)*p/100)] }
	t.Logf("%d pods (created in %v): IP->tags p50 %v p90 %v p99 %v max %v; last tagged %v after the first IP; longest plateau %v; calls %v",
		n, created.Round(time.Millisecond), pct(50), pct(90), pct(99), lats[len(lats)-1], at[len(at)-1].Sub(start).Round(time.Millisecond), plateau, h.calls())
}
