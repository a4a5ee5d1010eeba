package nodeeni_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// The operator's entries in the ENINodes and its NodeENI status (counts,
// conditions), rewritten by someone else who may write them (issue 25,
// finding 8: an attachment's macAddress set to the node's primary NIC's),
// are restored within one reconcile, seconds after the write, not at the
// next resync (an hour here). The controller's own writes wake nobody
// up: with no event, the reconciles stay as they are.
func TestTamperedStatusIsRestored(t *testing.T) {
	h, _ := nodesHarness(t, 2, "tamper")
	o := h.options()
	o.ResyncInterval = time.Hour
	h.start(o)
	h.createNodeENI("tm", h.multusSpec(map[string]string{"ng": "tamper"}))
	good := h.ready("tm", 2).Status
	goodEntries := h.attachments("tm")
	if len(goodEntries) != 2 {
		t.Fatalf("entries %+v", goodEntries)
	}

	time.Sleep(time.Second) // the last writes' events are in
	before := reconciles(t)
	time.Sleep(2 * time.Second)
	if n := reconciles(t); n != before {
		t.Fatalf("%v reconciles of a steady NodeENI with no event: its own writes wake it up", n-before)
	}

	node := goodEntries[0].NodeID
	tampers := []struct {
		what   string
		entry  func(*v1alpha1.ENINodeSpec)
		status func(*v1alpha1.NodeENIStatus)
	}{
		{what: "an entry's macAddress", entry: func(s *v1alpha1.ENINodeSpec) { s.Attachments[0].MACAddress = "02:aa:00:00:00:01" }},
		{what: "an entry's status", entry: func(s *v1alpha1.ENINodeSpec) { s.Attachments[0].Status = v1alpha1.AttachmentCreated }},
		{what: "an entry removed", entry: func(s *v1alpha1.ENINodeSpec) { s.Attachments = nil }},
		{what: "the Ready condition and the counts", status: func(s *v1alpha1.NodeENIStatus) {
			s.ReadyNodes = 0
			meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Tampered", Message: "x"})
		}},
	}
	for _, tc := range tampers {
		var err error
		if tc.entry != nil {
			en := &v1alpha1.ENINode{}
			if err = h.k8s.Get(context.Background(), client.ObjectKey{Name: node}, en); err == nil {
				old := en.DeepCopy()
				tc.entry(&en.Spec)
				err = h.k8s.Patch(context.Background(), en, client.MergeFrom(old))
			}
		} else {
			ne := h.get("tm")
			old := ne.DeepCopy()
			tc.status(&ne.Status)
			err = h.k8s.Status().Patch(context.Background(), ne, client.MergeFrom(old))
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		h.eventually(tc.what+": restored", 5*time.Second, func() (bool, string) {
			cur, entries := h.get("tm").Status, h.attachments("tm")
			ready, want := meta.FindStatusCondition(cur.Conditions, v1alpha1.ConditionReady), meta.FindStatusCondition(good.Conditions, v1alpha1.ConditionReady)
			ok := equality.Semantic.DeepEqual(undated(entries), undated(goodEntries)) && cur.ReadyNodes == good.ReadyNodes &&
				ready != nil && ready.Status == want.Status && ready.Reason == want.Reason && ready.Message == want.Message
			return ok, fmt.Sprintf("entries %+v, readyNodes %d, conditions %+v", entries, cur.ReadyNodes, cur.Conditions)
		})
	}
}

// undated is as without their lastUpdated: a restored entry is new.
func undated(as []v1alpha1.ENIAttachment) []v1alpha1.ENIAttachment {
	out := make([]v1alpha1.ENIAttachment, len(as))
	for i, a := range as {
		a.LastUpdated = metav1.Time{}
		out[i] = a
	}
	return out
}

// A steady NodeENI is written once it is ready and never again, however
// many resyncs pass, nor are its nodes' ENINodes: the plan is unchanged,
// and the controller's own writes do not make it reconcile again.
func TestSteadyNodeENIWritesNoStatus(t *testing.T) {
	h, _ := nodesHarness(t, 2, "steady")
	h.start(h.options()) // resync every 300 ms
	h.createNodeENI("st", h.multusSpec(map[string]string{"ng": "steady"}))
	h.ready("st", 2)
	time.Sleep(time.Second) // writes under way when ready was seen
	w := h.watchWrites("st")
	versions := h.eniNodeVersions()
	before := reconciles(t)
	time.Sleep(3 * time.Second)
	if n := reconciles(t) - before; n < 5 {
		t.Fatalf("%v reconciles in 3 s; the resyncs should bring about 10", n)
	}
	// The watch's first event is the object as it was (Added).
	if n := w.count() - 1; n != 0 {
		t.Fatalf("%d status writes of a steady NodeENI over about 10 resyncs", n)
	}
	if after := h.eniNodeVersions(); len(versions) != 2 || !equality.Semantic.DeepEqual(versions, after) {
		t.Fatalf("ENINodes written over about 10 resyncs: %v, then %v", versions, after)
	}
}
