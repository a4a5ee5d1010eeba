package nodeeni_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

func enisOf(list []awstypes.ENI, node string) []awstypes.ENI {
	var out []awstypes.ENI
	for _, e := range list {
		if e.Tags[eniplan.TagNode] == node {
			out = append(out, e)
		}
	}
	return out
}

// waitENIs waits until the emulator holds exactly n of the cluster's ENIs
// and each of them is attached.
func (h *harness) waitENIs(n int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d ENIs in EC2", n), waitFor, func() (bool, string) {
		list := h.enis()
		for _, e := range list {
			if e.Attachment == nil || e.Attachment.Status != "attached" {
				return false, fmt.Sprintf("%s is %s", e.ID, e.Status)
			}
		}
		return len(list) == n, fmt.Sprintf("%d ENIs", len(list))
	})
}

func (h *harness) relabel(node string, f func(map[string]string)) {
	h.t.Helper()
	n := &corev1.Node{}
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
		h.t.Fatal(err)
	}
	f(n.Labels)
	if err := h.k8s.Update(context.Background(), n); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) deleteNode(node string) {
	h.t.Helper()
	if err := h.k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		h.t.Fatal(err)
	}
}

// Item 4: a node unlabelled, a node deleted, a subnet removed from the
// spec and the NodeENI deleted each detach, wait for available, delete,
// and update status; the finalizer goes last and nothing is left.
func TestCleanup(t *testing.T) {
	h := newHarness(t, threeNodes())
	for i, n := range map[int]string{0: "n0", 1: "n1", 3: "n2"} { // the zone a instances
		h.addNode(n, h.instance(i), "us-east-1a", map[string]string{"ng": "cl"})
	}
	m := h.start(h.options())
	spec := h.spec(map[string]string{"ng": "cl"})
	spec.SubnetNames = []string{"multus-a", "storage-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("cl", spec)
	h.ready("cl", 3)
	h.waitENIs(6)
	if f := h.get("cl").Finalizers; len(f) != 1 || f[0] != nodeeni.Finalizer {
		t.Fatalf("finalizers %v", f)
	}

	statusNodes := func() map[string]int {
		out := map[string]int{}
		for _, a := range h.attachments("cl") {
			out[a.NodeID]++
		}
		return out
	}
	h.relabel("n0", func(l map[string]string) { delete(l, "ng") })
	h.waitENIs(4)
	if len(enisOf(h.enis(), "n0")) != 0 {
		t.Fatal("n0 keeps ENIs")
	}
	h.ready("cl", 2)
	if s := statusNodes(); s["n0"] != 0 || s["n1"] != 2 || s["n2"] != 2 {
		t.Fatalf("status after unlabelling n0: %v", s)
	}

	h.deleteNode("n1")
	h.waitENIs(2)
	h.ready("cl", 1)
	if s := statusNodes(); len(s) != 1 || s["n2"] != 2 {
		t.Fatalf("status after deleting n1: %v", s)
	}

	h.update("cl", func(s *v1alpha1.NodeENISpec) { s.SubnetNames = []string{"multus-a"} })
	h.waitENIs(1)
	if e := h.enis()[0]; e.SubnetID != h.Subnets["multus-a"] {
		t.Fatalf("kept ENI in %s, want multus-a", e.SubnetID)
	}
	if ne := h.ready("cl", 1); len(h.attachments(ne.Name)) != 1 {
		t.Fatalf("status %+v", h.attachments(ne.Name))
	}

	h.deleteNodeENI("cl")
	if left := h.enis(); len(left) != 0 {
		t.Fatalf("ENIs left: %+v", left)
	}
	if d, del := h.calls("DetachNetworkInterface"), h.calls("DeleteNetworkInterface"); d != 6 || del != 6 {
		t.Errorf("%d detaches and %d deletes, want 6 each", d, del)
	}
	for reason, n := range map[string]float64{eniplan.CleanupNodeUnmatched: 2, eniplan.CleanupNodeDeleted: 2,
		eniplan.CleanupSubnetRemoved: 1, eniplan.CleanupNodeENIDeleted: 1} {
		if got := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_cleanups_total", map[string]string{"reason": reason, "outcome": "deleted"}); got != n {
			t.Errorf("cleanups{reason=%s} = %v, want %v", reason, got, n)
		}
	}
}

// Item 4: an instance terminated: its DeleteOnTermination ENIs vanish with
// it and status follows; an ENI without DeleteOnTermination is deleted by
// the operator once the node is gone.
func TestInstanceTerminated(t *testing.T) {
	h, _ := nodesHarness(t, 2, "term")
	h.start(h.options())
	spec := h.multusSpec(map[string]string{"ng": "term"})
	h.createNodeENI("dot", spec)
	keep := h.spec(map[string]string{"ng": "term"})
	keep.SubnetName = "storage-a"
	keep.SecurityGroupNames = []string{"storage"}
	keep.DeviceIndex = 2
	keep.DeleteOnTermination = ptr.To(false)
	h.createNodeENI("keep", keep)
	h.ready("dot", 2)
	h.ready("keep", 2)
	h.waitENIs(4)

	// Through the EC2 Query API, as AWS terminates an instance (the
	// operator's client has no such call).
	resp, err := http.PostForm(h.URL, url.Values{"Action": {"TerminateInstances"}, "Version": {"2016-11-15"}, "InstanceId.1": {h.instance(0)}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("TerminateInstances: HTTP %d", resp.StatusCode)
	}
	h.eventually("status follows the termination", waitFor, func() (bool, string) {
		ne := h.get("dot")
		c := condition(ne, v1alpha1.ConditionDegraded)
		gone := true
		for _, a := range h.attachments(ne.Name) {
			if a.NodeID == "n0" {
				gone = false
			}
		}
		return gone && c != nil && c.Status == metav1.ConditionTrue && c.Reason == eniplan.ReasonInstanceNotRunning,
			fmt.Sprintf("%+v", ne.Status)
	})
	list := h.enis()
	if n := len(enisOf(list, "n0")); n != 1 {
		t.Fatalf("n0 has %d ENIs after termination, want only the one without DeleteOnTermination", n)
	}
	if e := enisOf(list, "n0")[0]; e.Tags[eniplan.TagNodeENI] != "keep" || e.Attachment != nil {
		t.Fatalf("n0's remaining ENI %+v", e)
	}

	// The cluster removes the node object: the kept ENI goes too.
	h.deleteNode("n0")
	h.eventually("n0's ENIs gone", waitFor, func() (bool, string) {
		n := len(enisOf(h.enis(), "n0"))
		return n == 0, fmt.Sprintf("%d ENIs", n)
	})
	h.ready("dot", 1)
	h.ready("keep", 1)
	if c := condition(h.get("dot"), v1alpha1.ConditionDegraded); c.Status != metav1.ConditionFalse {
		t.Fatalf("Degraded %+v", c)
	}
}

// A node that leaves the selector and comes back gets a new ENI at once,
// with one create: the deleted ENI's ClientToken is not sent again (it
// was, with another creation time: EC2 refused it as used with other
// parameters, which reads as an ENI not visible yet, and the node waited
// out the visibility window, its create retried all along).
func TestNodeBackInTheSelectorGetsANewENIAtOnce(t *testing.T) {
	h, _ := nodesHarness(t, 1, "back")
	h.start(h.options())
	h.createNodeENI("back", h.multusSpec(map[string]string{"ng": "back"}))
	h.waitENIs(1)
	h.relabel("n0", func(l map[string]string) { delete(l, "ng") })
	h.waitENIs(0)
	h.relabel("n0", func(l map[string]string) { l["ng"] = "back" })
	h.waitENIs(1)
	if n := h.calls("CreateNetworkInterface"); n != 2 {
		t.Errorf("%d CreateNetworkInterface calls for two ENIs, want 2", n)
	}
}
