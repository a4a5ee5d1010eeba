package nodeeni_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// nodeENIEvents lists the events.k8s.io/v1 events about a NodeENI.
func (h *harness) nodeENIEvents(ne *v1alpha1.NodeENI) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		h.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "NodeENI" && e.Regarding.UID == ne.UID {
			out = append(out, e)
		}
	}
	return out
}

// Twenty nodes' creations are twenty events, each naming its node and
// none folded into a series of another node's.
func TestOneEventPerNodeAndAction(t *testing.T) {
	const nodes = 20
	h, _ := nodesHarness(t, nodes, "events")
	h.start(h.options())
	spec := h.multusSpec(nil)
	h.createNodeENI("twenty", spec)
	ne := h.ready("twenty", nodes)

	for _, reason := range []string{"Created", "Attached"} {
		h.eventually(fmt.Sprintf("%d %s events", nodes, reason), waitFor, func() (bool, string) {
			seen := map[string]bool{}
			var bad []string
			for _, e := range h.nodeENIEvents(ne) {
				if e.Reason != reason {
					continue
				}
				if e.Series != nil || e.DeprecatedCount > 1 {
					bad = append(bad, "series: "+e.Note)
				}
				if e.Related == nil || e.Related.Kind != "Node" || !strings.Contains(e.Note, "node "+e.Related.Name) {
					bad = append(bad, fmt.Sprintf("related %+v: %s", e.Related, e.Note))
					continue
				}
				seen[e.Related.Name] = true
			}
			return len(seen) == nodes && len(bad) == 0, fmt.Sprintf("%d nodes named; %v", len(seen), bad)
		})
	}
}

// A Degraded event about many nodes stays within the API's 1 KiB and
// summarises: it names what fits and counts the rest, never cut off.
func TestManyNodesDegradedEventIsASummary(t *testing.T) {
	const nodes = 20
	h := newHarness(t, emulator.World{})
	h.start(h.options())
	for i := range nodes {
		// Long names, and no provider ID: each node's message differs.
		name := fmt.Sprintf("%s-node-without-a-provider-id-%02d", strings.Repeat("x", 40), i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": h.label}}}
		if err := h.k8s.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	spec := h.multusSpec(nil)
	h.createNodeENI("many", spec)
	cond := h.degradedWith("many", eniplan.ReasonNotOnEC2, "and ")
	if len(cond.Message) > bounded.EventNote || strings.HasSuffix(cond.Message, "…") {
		t.Fatalf("condition message of %d bytes, cut off: %s", len(cond.Message), cond.Message)
	}
	ne := h.get("many")
	h.eventually("the Degraded event", waitFor, func() (bool, string) {
		for _, e := range h.nodeENIEvents(ne) {
			if e.Reason == eniplan.ReasonNotOnEC2 && e.Type == corev1.EventTypeWarning {
				if len(e.Note) > bounded.EventNote || strings.HasSuffix(e.Note, "…") {
					t.Fatalf("event note of %d bytes, cut off: %s", len(e.Note), e.Note)
				}
				shown := strings.Count(e.Note, ": NodeNotOnEC2: ")
				if !strings.HasSuffix(e.Note, fmt.Sprintf("and %d more", nodes-shown)) {
					t.Fatalf("event names %d nodes and does not count the other %d: %s", shown, nodes-shown, e.Note)
				}
				return true, ""
			}
		}
		return false, "no event"
	})
}
