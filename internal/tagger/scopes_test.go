package tagger_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// In the operator the EC2 state also keeps the NodeENI controller's
// scope (the cluster's tag) fresh, every resync interval. A refresh of
// it must not take back what the state knows of the pod ENIs the tagger
// has tagged since the VPC was last read: a pod's next reconcile would
// see its ENI untagged, write every tag again and — when a key was
// removed from the annotation — leave the removed tag on the ENI, owned
// by no one. Here a key is removed after such a refresh: one DeleteTags
// of that key, nothing else, and the ENI carries exactly what is asked.
func TestNarrowRefreshDoesNotUndoTheTaggersWrites(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	h.scopes = []ec2.Scope{{Name: "cluster", Interval: time.Hour,
		Filters: []ec2.Filter{{Name: "tag:eni-operator.io/cluster", Values: []string{"test"}}}}}
	o := h.options()
	o.InventoryInterval = time.Hour // the VPC is read once, before the pod is tagged
	h.startManager(o)
	eni := h.loaded.NetworkInterfaces[0]
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
	h.waitCondition("web", tagger.ReasonSynced, "")
	if err := h.state.Refresh(context.Background(), "cluster"); err != nil {
		t.Fatal(err)
	}
	h.emu.ResetCounts()
	h.annotate("web", "Team=Dev")
	h.waitCondition("web", tagger.ReasonSynced, "1 tags in sync")
	// The condition comes with the record, after the write.
	if c := h.calls(); c["DeleteTags"] != 1 || c["CreateTags"] != 0 {
		t.Errorf("removing a key after a refresh of another scope made calls %v, want one DeleteTags", c)
	}
	want := withHash(map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni", "Team": "Dev"},
		map[string]string{"Team": "Dev", "Cost": "1"}) // removing a key keeps the token
	if got := h.eniTags(eni.ID); !maps.Equal(got, want) {
		t.Errorf("ENI tags %v, want %v", got, want)
	}
}
