package nodeeni

import (
	"maps"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// A record written to EC2 stands in for the ENINode's until the ENINode
// shows it (a failed write, a cache behind), and no longer after.
func TestAppliedTagsBridgeTheENINode(t *testing.T) {
	o := eniplan.Owned{Node: "n1"}
	o.ID, o.Tags = "eni-1", map[string]string{"Team": "a", "Env": "prod"}
	stale := map[string]*v1alpha1.ENINode{"n1": {Spec: v1alpha1.ENINodeSpec{Attachments: []v1alpha1.ENIAttachment{
		{NodeENI: "ne", NodeID: "n1", ENIID: "eni-1", AppliedTags: map[string]string{"Team": "a"}},
		// An entry in another node's object never counts.
		{NodeENI: "ne", NodeID: "n2", ENIID: "eni-2", AppliedTags: map[string]string{"Team": "a"}},
	}}}}
	applied := newAppliedTags()
	applied.set("eni-1", map[string]string{"Team": "a", "Env": "prod"})
	got := applied.records("ne", stale, []eniplan.Owned{o})
	if !maps.Equal(got["eni-1"], map[string]string{"Team": "a", "Env": "prod"}) || got["eni-2"] != nil {
		t.Errorf("with the ENINode behind: %v", got)
	}
	stale["n1"].Spec.Attachments[0].AppliedTags = map[string]string{"Team": "a", "Env": "prod"}
	if got := applied.records("ne", stale, []eniplan.Owned{o}); !maps.Equal(got["eni-1"], map[string]string{"Team": "a", "Env": "prod"}) || len(applied.m) != 0 {
		t.Errorf("once the ENINode shows it: %v, held %v", got, applied.m)
	}
}
