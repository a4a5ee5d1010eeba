package nodeeni_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// The Ready and Desired columns show 0, asked of the API server as a
// Table (what kubectl get prints).
func TestPrinterColumnsShowZero(t *testing.T) {
	h := newHarness(t, threeNodes())
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	h.start(h.options())
	none := h.multusSpec(map[string]string{"pool": "none"}) // matches no node
	h.createNodeENI("none", none)
	blocked := h.spec(nil) // one node, never ready: its subnet does not exist
	blocked.SubnetName = "no-such-subnet"
	blocked.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("blocked", blocked)
	h.eventually("none observed", waitFor, func() (bool, string) {
		c := condition(h.get("none"), v1alpha1.ConditionReady)
		return c != nil && c.Reason == eniplan.ReasonNoMatchingNodes, fmt.Sprintf("%+v", c)
	})
	h.eventually("blocked observed", waitFor, func() (bool, string) {
		c := condition(h.get("blocked"), v1alpha1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", c)
	})

	for name, want := range map[string][2]float64{"none": {0, 0}, "blocked": {0, 1}} {
		cells := h.tableRow("nodeenis", name)
		for i, col := range []string{"Ready", "Desired"} {
			if v, ok := cells[col].(float64); !ok || v != want[i] {
				t.Errorf("%s: column %s is %#v, want %v (all cells: %v)", name, col, cells[col], want[i], cells)
			}
		}
	}
}

// What a node has, kubectl get eninodes shows: the NodeENIs, the ENIs
// attached and those its agent configured.
func TestENINodeColumns(t *testing.T) {
	h, nodes := nodesHarness(t, 2, "columns")
	h.start(h.options())
	h.createNodeENI("cols", h.multusSpec(map[string]string{"ng": "columns"}))
	h.ready("cols", 2)
	var eni string
	for _, a := range h.attachments("cols") {
		if a.NodeID == nodes[0] {
			eni = a.ENIID
		}
	}
	h.report(nodes[0], v1alpha1.InterfaceStatus{ENIID: eni, State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()})
	h.eventually("the report in the columns", waitFor, func() (bool, string) {
		cells := h.tableRow("eninodes", nodes[0])
		return cells["NodeENIs"] == "cols" && cells["Attached"] == eni && cells["Configured"] == eni && cells["Failed"] == nil,
			fmt.Sprintf("cells %v", cells)
	})
}

// tableRow gets an object as a server-side Table and returns its cells
// by column name.
func (h *harness) tableRow(resource, name string) map[string]any {
	h.t.Helper()
	table := testenv.Table(h.t, shared.Env(h.t).Config, "/apis/networking.k8s.aws/v1alpha1/"+resource+"/"+name)
	if len(table.Rows) != 1 {
		h.t.Fatalf("%d rows", len(table.Rows))
	}
	out := map[string]any{}
	for i, c := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			out[c.Name] = table.Rows[0].Cells[i]
		}
	}
	if len(out) < 3 {
		h.t.Fatalf("no columns of our own: %v", table.ColumnDefinitions)
	}
	return out
}
