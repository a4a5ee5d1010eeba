package tagger_test

import (
	"fmt"
	"testing"

	"github.com/eni-operator/eni-operator/internal/tagger"
)

// The Kubernetes API's budget does not pace the AWS writes: with one
// slot and a budget of one write a second, every pod's ENI is tagged
// while most pods still wait for their record and condition (two writes
// each). A reconcile waits on EC2's batch and on that budget without its
// slot; one holding it would tag an ENI only every two seconds.
func TestTagWritesDoNotWaitOnTheKubernetesBudget(t *testing.T) {
	const n = 10
	h := newHarness(t, branchWorld(n))
	h.kubeQPS = 1
	o := h.options()
	o.MaxConcurrentReconciles = 1
	h.startManager(o)
	for i, e := range h.loaded.NetworkInterfaces {
		h.pod(fmt.Sprintf("p-%d", i), e.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	}
	untagged := 0
	h.eventually("every ENI tagged", func() bool {
		untagged = 0
		for _, e := range h.loaded.NetworkInterfaces {
			if h.eniTags(e.ID)["Team"] != "Dev" {
				untagged++
			}
		}
		return untagged == 0
	}, func() string { return fmt.Sprint(untagged, " ENIs untagged") })
	synced := 0
	for i := range n {
		if c := condition(h.get(fmt.Sprintf("p-%d", i))); c != nil && c.Reason == tagger.ReasonSynced {
			synced++
		}
	}
	if synced > n/2 {
		t.Errorf("%d of %d pods Synced when the last ENI was tagged: the writes waited on the Kubernetes budget", synced, n)
	}
	for i := range n {
		h.waitCondition(fmt.Sprintf("p-%d", i), tagger.ReasonSynced, "")
	}
}
