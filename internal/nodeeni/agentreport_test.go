package nodeeni_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// The node agents' reports in status.interfaces become the
// InterfacesConfigured condition: Pending without reports (naming the
// nodes once the grace period is over), True once every attached ENI is
// reported Configured, False InterfaceFailed when one is reported Failed.
// A report that leaves the aggregate as it is makes the controller
// reconcile but write nothing, the controller never writes
// status.interfaces, and Ready stays about attachments only.
func TestInterfacesConfiguredAggregatesAgentReports(t *testing.T) {
	h, _ := nodesHarness(t, 2, "agent")
	o := h.options()
	// No periodic re-check: every change of the condition below must come
	// from the reports themselves (the predicate) or from the controller's
	// own timer for the grace period.
	o.ResyncInterval = time.Hour
	o.AgentReportGracePeriod = 2 * time.Second
	h.start(o)
	spec := h.multusSpec(map[string]string{"ng": "agent"})
	h.createNodeENI("ag", spec)
	ne := h.ready("ag", 2)
	eniOf := map[string]string{}
	for _, a := range h.attachments(ne.Name) {
		eniOf[a.NodeID] = a.ENIID
	}
	if len(eniOf) != 2 {
		t.Fatalf("attachments %+v", h.attachments(ne.Name))
	}
	w := h.watchWrites("ag")

	// No agent has reported: Pending, and once the grace period is over
	// (no event: the controller's own requeue) both nodes are named.
	h.configured("ag", "no report after the grace period", metav1.ConditionFalse, eniplan.ReasonPending,
		"2 of 2 attached ENIs not configured yet",
		"no report from eni-agent on node n0 for "+eniOf["n0"]+": is the eni-agent DaemonSet running there?",
		"no report from eni-agent on node n1 for "+eniOf["n1"])

	configured := func(node string, mtu int32) v1alpha1.InterfaceStatus {
		return v1alpha1.InterfaceStatus{ENIID: eniOf[node], InterfaceName: "eth1", MTU: mtu, Up: true,
			State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()}
	}
	h.report("n0", configured("n0", 1500))
	h.configured("ag", "n0 configured, n1 silent", metav1.ConditionFalse, eniplan.ReasonPending,
		"1 of 2 attached ENIs not configured yet: no report from eni-agent on node n1")
	h.report("n1", configured("n1", 1500))
	got := h.configured("ag", "both configured", metav1.ConditionTrue, eniplan.ReasonConfigured, "all 2 attached ENIs on 2 nodes")
	if c := condition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || c.Reason != eniplan.ReasonAttached {
		t.Fatalf("Ready changed with the agents' reports: %+v", c)
	}

	// A report that changes the entry but not the aggregate: the
	// controller looks (a reconcile is counted) and writes nothing.
	before, written := reconciles(t), w.count()
	h.report("n0", configured("n0", 9001))
	h.eventually("reconcile on the report", waitFor, func() (bool, string) {
		n := reconciles(t)
		return n > before, fmt.Sprintf("%v reconciles, %v before", n, before)
	})
	time.Sleep(500 * time.Millisecond) // room for a write that should not come
	if n := w.count() - written; n > 0 {
		t.Fatalf("%d writes of the NodeENI after a report that left the aggregate unchanged: %s", n, w.describe())
	}

	// A failure reported by one agent: False InterfaceFailed, quoting it.
	failed := configured("n1", 1500)
	failed.State, failed.Message, failed.Up = v1alpha1.InterfaceFailed, "name multus is taken by eth3", false
	h.report("n1", failed)
	got = h.configured("ag", "n1 failed", metav1.ConditionFalse, eniplan.ReasonInterfaceFailed,
		"1 of 2 attached ENIs failed: node n1: "+eniOf["n1"]+": name multus is taken by eth3")
	if c := condition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || c.Reason != eniplan.ReasonAttached {
		t.Fatalf("Ready changed with the agents' reports: %+v", c)
	}
	h.report("n1", configured("n1", 1500))
	h.configured("ag", "n1 fixed", metav1.ConditionTrue, eniplan.ReasonConfigured)

	// The agents' entries are the agents' alone: no other field manager
	// ever took part of an ENINode's status.interfaces.
	for node := range eniOf {
		en := &v1alpha1.ENINode{}
		if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: node}, en); err != nil {
			t.Fatal(err)
		}
		for _, mf := range en.ManagedFields {
			if mf.Manager != "eni-agent/"+node && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:interfaces"`) {
				t.Errorf("field manager %q (%s) owns part of %s's status.interfaces: %s", mf.Manager, mf.Operation, node, mf.FieldsV1.GetRawString())
			}
		}
		if len(en.Status.Interfaces) != 1 {
			t.Errorf("%s: interfaces %+v", node, en.Status.Interfaces)
		}
	}
}

// report writes node's ENINode status.interfaces the way the node's
// agent does: server-side apply of the status subresource as
// eni-agent/<node>, forcing ownership, the whole list each time.
func (h *harness) report(node string, entries ...v1alpha1.InterfaceStatus) {
	h.t.Helper()
	if entries == nil {
		entries = []v1alpha1.InterfaceStatus{} // none: an empty list, which removes the node's entries
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ENINode",
		"metadata": map[string]any{"name": node}, "status": map[string]any{"interfaces": entries}})
	u := &unstructured.Unstructured{}
	if err == nil {
		err = u.UnmarshalJSON(raw)
	}
	if err == nil {
		err = h.k8s.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner("eni-agent/"+node), client.ForceOwnership)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// configured waits for the InterfacesConfigured condition of a NodeENI to
// have status and reason and a message holding every fragment.
func (h *harness) configured(name, what string, status metav1.ConditionStatus, reason string, fragments ...string) *v1alpha1.NodeENI {
	h.t.Helper()
	var ne *v1alpha1.NodeENI
	h.eventually(what, waitFor, func() (bool, string) {
		ne = h.get(name)
		c := condition(ne, v1alpha1.ConditionInterfacesConfigured)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != ne.Generation {
			return false, fmt.Sprintf("condition %+v", c)
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return false, fmt.Sprintf("message %q lacks %q", c.Message, f)
			}
		}
		return true, ""
	})
	return ne
}

// reconciles is controller-runtime's count of finished NodeENI
// reconciles. The counter is the process's, shared by the managers of
// every test; the tests of this package run one at a time.
func reconciles(t *testing.T) float64 {
	t.Helper()
	return testenv.MetricValue(t, ctrlmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": "nodeeni"})
}

// writeLog records every version of one NodeENI the API server sends to a
// watch, so a test can count the writes after a given one.
type writeLog struct {
	mu       sync.Mutex
	versions []*v1alpha1.NodeENI
}

func (h *harness) watchWrites(name string) *writeLog {
	h.t.Helper()
	wc, err := client.NewWithWatch(shared.Env(h.t).Config, client.Options{Scheme: testenv.Scheme(h.t)})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	wi, err := wc.Watch(ctx, &v1alpha1.NodeENIList{}, client.MatchingFields{"metadata.name": name})
	if err != nil {
		h.t.Fatal(err)
	}
	l := &writeLog{}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			ne, ok := ev.Object.(*v1alpha1.NodeENI)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			l.mu.Lock()
			l.versions = append(l.versions, ne)
			l.mu.Unlock()
		}
	}()
	return l
}

// count is how many versions the watch has seen.
func (l *writeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.versions)
}

func (l *writeLog) describe() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ne := range l.versions {
		fmt.Fprintf(&b, "\n  rv %s: conditions %+v", ne.ResourceVersion, ne.Status.Conditions)
	}
	return b.String()
}
