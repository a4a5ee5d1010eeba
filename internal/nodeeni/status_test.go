package nodeeni

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

func TestStatusSteadyStateWritesNothing(t *testing.T) {
	in := eniplan.PlanInput{
		Base: 1, DeleteOnTermination: true, SecurityGroups: []string{"sg-1"}, Description: "d", SubnetsComplete: true,
		Wants: []eniplan.Want{
			{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-a", Rank: 0},
			{Node: "n1", Instance: "i-1", Zone: "z", Subnet: "s-b", Rank: 1},
		},
		Nodes:         map[string]bool{"n1": true, "n2": true},
		NodeInstances: map[string]string{"n1": "i-1"},
	}
	attached := func(id, subnet string, index int) eniplan.Owned {
		return eniplan.OwnedFrom(awstypes.ENI{ID: id, SubnetID: subnet, Status: "in-use", SecurityGroups: []string{"sg-1"}, Description: "d",
			Tags: map[string]string{eniplan.TagNodeENIUID: "uid", eniplan.TagNode: "n1", eniplan.TagInstance: "i-1",
				eniplan.TagDeviceIndexBase: "1", eniplan.TagDeviceIndex: fmt.Sprint(index)},
			Attachment: &awstypes.Attachment{ID: "attach-" + id, InstanceID: "i-1", DeviceIndex: index, Status: "attached", DeleteOnTermination: true}})
	}
	in.ENIs = []eniplan.Owned{attached("e1", "s-a", 1), attached("e2", "s-b", 2)}
	cond := func(st v1alpha1.NodeENIStatus, t string) metav1.Condition {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			return *c
		}
		return metav1.Condition{}
	}
	p := eniplan.MakePlan(in)
	t0 := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	st := statusFor(pass{ne: ne, in: in, Acted: eniplan.Acted{After: p}}, nil)
	if st.ReadyNodes != 1 || st.DesiredNodes != 1 || len(st.Attachments) != 0 || st.ObservedGeneration != 3 {
		t.Fatalf("status %+v", st)
	}
	// The node's share, stamped at t0, is the same a pass later.
	share := eniplan.SharesByNode("x", p.Attachments)["n1"]
	first := eniplan.AttachmentsSince(nil, share, t0)
	if len(first) != 2 || first[0].NodeENI != "x" {
		t.Fatalf("share %+v", first)
	}
	if later := eniplan.AttachmentsSince(first, eniplan.SharesByNode("x", eniplan.MakePlan(in).Attachments)["n1"], metav1.Now()); !eniplan.SameShare(first, later) {
		t.Fatalf("a second pass over the same state changes the node's share:\n%+v\n%+v", first, later)
	}
	ready := cond(st, v1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionTrue || ready.Reason != eniplan.ReasonAttached {
		t.Fatalf("Ready %+v", ready)
	}
	ne.Status = st
	again := statusFor(pass{ne: ne, in: in, Acted: eniplan.Acted{After: eniplan.MakePlan(in)}}, nil)
	if !equality.Semantic.DeepEqual(st, again) {
		t.Fatalf("a second pass over the same state changes the status:\n%+v\n%+v", st, again)
	}
	blocks := []eniplan.Blocked{{Node: "n2", Reason: eniplan.ReasonENILimitReached, Message: "full"}}
	deg := statusFor(pass{ne: ne, in: in, Acted: eniplan.Acted{After: p}, blocks: blocks}, nil)
	if c := cond(deg, v1alpha1.ConditionDegraded); c.Status != metav1.ConditionTrue || c.Reason != eniplan.ReasonENILimitReached ||
		!strings.Contains(c.Message, "node n2: ENILimitReached: full") {
		t.Fatalf("Degraded %+v", c)
	}
	if c := cond(deg, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Fatalf("Ready %+v", c)
	}
}
