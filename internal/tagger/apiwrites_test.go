package tagger_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// apiWrites are the writes the API server counted (its own
// apiserver_request_total), by "resource[/subresource] VERB": evidence
// independent of the operator's counters.
type apiWrites map[string]float64

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// serverWrites reads the API server's /metrics.
func (h *harness) serverWrites() apiWrites {
	h.t.Helper()
	cs, err := kubernetes.NewForConfig(shared.Env(h.t).Config)
	if err != nil {
		h.t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	out := apiWrites{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(line[:i], -1) {
			labels[m[1]] = m[2]
		}
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		default:
			continue
		}
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		out[res+" "+labels["verb"]] += v
	}
	if err := sc.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// since returns the writes made after before, by resource and verb.
func (w apiWrites) since(before apiWrites) apiWrites {
	out := apiWrites{}
	for k, v := range w {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// resource sums the writes to one resource[/subresource], all verbs.
func (w apiWrites) resource(res string) float64 {
	n := 0.0
	for k, v := range w {
		if r, _, _ := strings.Cut(k, " "); r == res {
			n += v
		}
	}
	return n
}

func (w apiWrites) String() string {
	var b strings.Builder
	for k, v := range w {
		fmt.Fprintf(&b, "%s=%v ", k, v)
	}
	return b.String()
}

// assertWrites checks that the tagger made exactly want writes per
// resource[/subresource] (every verb); resources it does not name must
// have none (leases, the tests' own pod creation and status excepted).
func assertWrites(t *testing.T, what string, got apiWrites, want map[string]float64) {
	t.Helper()
	for res, n := range want {
		if g := got.resource(res); g != n {
			t.Errorf("%s: %v writes to %s, want %v (all writes: %v)", what, g, res, n, got)
		}
	}
}

// Counted by the API server: 200 new pods tagged in a burst cost two pod
// writes each (the last-applied annotations, the condition), one ledger
// ConfigMap write in all and no event; a restart with everything in sync
// costs no write at all; a pod whose tags are then changed gets one
// Normal event.
func TestKubernetesWritesPerPod(t *testing.T) {
	const n = 200
	h := newHarness(t, branchWorld(n))
	o := h.options()
	// Only the size trigger (n changes) or the stop writes the ledger.
	o.LedgerBatchInterval, o.LedgerBatchSize = time.Hour, n
	h.startManager(o)
	h.eventually("k8s-eni-tagger's cache import marked done", func() bool { return h.cmCount("eni-tagger-cache-00") == 1 }, nil)
	before := h.serverWrites()
	// As a kubelet does: the pod is created without an IP, which comes
	// moments later.
	h.pods(n, 5)
	h.waitSynced(n)
	h.eventually("every pod's condition Synced", func() bool { return h.syncedConditions() == n }, nil)
	h.eventually("the ledger written", func() bool { return h.ledgerEntries() == n }, nil)
	h.stopManager()
	burst := h.serverWrites().since(before)
	t.Logf("burst of %d pods: %v", n, burst)
	assertWrites(t, "burst", burst, map[string]float64{"configmaps": 1, "events": 0})
	if got := burst["pods PATCH"]; got != n {
		t.Errorf("%v metadata patches of pods, want %d (one per pod: its last-applied annotations)", got, n)
	}
	if got := burst["pods/status APPLY"]; got != n {
		t.Errorf("%v status writes of pods, want %d (one per pod: its condition)", got, n)
	}

	before = h.serverWrites()
	h.startManager(o)
	h.eventually("every pod reconciled", func() bool { return h.reconciles() >= n }, func() string { return fmt.Sprint(h.reconciles()) })
	time.Sleep(300 * time.Millisecond)
	h.stopManager()
	restart := h.serverWrites().since(before)
	t.Logf("restart in sync: %v", restart)
	assertWrites(t, "restart in sync", restart, map[string]float64{"pods": 0, "pods/status": 0, "configmaps": 0, "events": 0})

	h.startManager(o)
	before = h.serverWrites()
	h.annotate("p-0007", "App=changed")
	h.waitCondition("p-0007", tagger.ReasonSynced, tagplan.Hash(map[string]string{"App": "changed"}))
	h.waitEvent("p-0007", "Normal/Synced")
	h.stopManager()
	change := h.serverWrites().since(before)
	t.Logf("one pod's tags changed: %v", change)
	// The test's own annotation patch is the other pods PATCH.
	assertWrites(t, "one change", change, map[string]float64{"pods": 2, "pods/status": 1, "configmaps": 1, "events": 1})
}

// syncedConditions counts the harness's pods whose condition is Synced,
// read from the API server.
func (h *harness) syncedConditions() int {
	h.t.Helper()
	var list corev1.PodList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		if c := condition(&list.Items[i]); c != nil && c.Reason == tagger.ReasonSynced {
			n++
		}
	}
	return n
}
