package nodeeni

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

func TestENINodeChangedPredicate(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	entry := v1alpha1.ENIAttachment{NodeENI: "x", NodeID: "n1", ENIID: "eni-1", MACAddress: "02:00:00:00:00:01", Status: v1alpha1.AttachmentAttached}
	tampered := entry
	tampered.MACAddress = "02:00:00:00:00:99"
	other := v1alpha1.ENIAttachment{NodeENI: "y", NodeID: "n1", ENIID: "eni-2", Status: v1alpha1.AttachmentAttached}
	en := func(entries []v1alpha1.ENIAttachment, ifs ...v1alpha1.InterfaceStatus) *v1alpha1.ENINode {
		return &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Spec: v1alpha1.ENINodeSpec{Attachments: entries}, Status: v1alpha1.ENINodeStatus{Interfaces: ifs}}
	}
	a := v1alpha1.InterfaceStatus{ENIID: "eni-1", State: v1alpha1.InterfacePending, LastUpdated: t0}
	aLater := a
	aLater.LastUpdated = t1
	aDone := a
	aDone.State = v1alpha1.InterfaceConfigured
	b := v1alpha1.InterfaceStatus{ENIID: "eni-2", State: v1alpha1.InterfaceConfigured, LastUpdated: t0}
	second := entry
	second.ENIID, second.DeviceIndex = "eni-0", 2 // the object sorts it after eni-1
	shares := newOwnWrites()
	shares.remember(eniplan.ShareKey("x", "n1"), []v1alpha1.ENIAttachment{entry})
	shares.remember(eniplan.ShareKey("z", "n1"), eniplan.SortedShare([]v1alpha1.ENIAttachment{zOf(second), zOf(entry)}))
	shares.remember(eniplan.ShareKey("y", "n1"), []v1alpha1.ENIAttachment{other})
	p := eniNodeChanged(shares)
	mine := []v1alpha1.ENIAttachment{entry}
	cases := []struct {
		name     string
		old, new *v1alpha1.ENINode
		want     bool
	}{
		{"the controller's own write", en(nil), en(mine), false},
		{"another NodeENI's own write", en(mine), en([]v1alpha1.ENIAttachment{entry, other}), false},
		{"an own write, the object's order not the plan's", en(nil), en(eniplan.WithShare(nil, "z", []v1alpha1.ENIAttachment{zOf(second), zOf(entry)})), false},
		{"only lastUpdated of a report moved", en(mine, a), en(mine, aLater), false},
		{"same reports in another order", en(mine, a, b), en(mine, b, a), false},
		{"first report", en(mine), en(mine, a), true},
		{"state changed", en(mine, a), en(mine, aDone), true},
		{"report removed", en(mine, a, b), en(mine, a), true},
		{"an entry's MAC rewritten by someone else", en(mine), en([]v1alpha1.ENIAttachment{tampered}), true},
		{"an entry removed by someone else", en(mine), en(nil), true},
	}
	for _, tc := range cases {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if p.Create(event.CreateEvent{Object: en(mine)}) || p.Generic(event.GenericEvent{Object: en(mine)}) {
		t.Error("creates are the controller's own")
	}
	if !p.Delete(event.DeleteEvent{Object: en(mine)}) || p.Delete(event.DeleteEvent{Object: en(nil)}) {
		t.Error("a deleted ENINode that held entries is written again; an empty one (the controller deletes those) is not")
	}
	// A deleted ENINode's shares are forgotten: a node that went leaves
	// no digest behind.
	if !shares.foreign(eniplan.ShareKey("x", "n1"), []v1alpha1.ENIAttachment{entry}) || !shares.foreign(eniplan.ShareKey("y", "n1"), []v1alpha1.ENIAttachment{other}) {
		t.Error("the shares of a deleted ENINode are still remembered")
	}
}

// zOf is an entry of NodeENI z.
func zOf(a v1alpha1.ENIAttachment) v1alpha1.ENIAttachment {
	a.NodeENI = "z"
	return a
}
