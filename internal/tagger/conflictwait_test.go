package tagger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// A pod refused as Conflict because another pod's tags hold its ENI is
// looked at again as soon as that pod is gone and its tags are removed,
// and gets its own (finding 7 of issue 25: it stayed Conflict for six
// minutes, across inventory refreshes, its ENI carrying no one's tags).
// The same holds when the holder drops its annotation instead. The
// inventory is read once at start and not again within the test, so only
// the release can be what brings the waiting pod back.
func TestConflictIsReexaminedWhenTheHolderIsGone(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	o := h.options()
	o.InventoryInterval = time.Hour
	h.startManager(o)
	for i, leave := range []func(name string){h.deletePod, func(name string) { h.annotate(name, "") }} {
		eni := h.loaded.NetworkInterfaces[i]
		holder, waiter := fmt.Sprintf("holder-%d", i), fmt.Sprintf("waiter-%d", i)
		h.pod(holder, eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
		h.waitCondition(holder, tagger.ReasonSynced, eni.ID)
		h.pod(waiter, eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Ops"})
		h.waitCondition(waiter, tagger.ReasonConflict, eni.ID)

		leave(holder)
		testenv.Eventually(t, waiter+" synced after "+holder+" let go", 10*time.Second, func() (bool, string) {
			c := condition(h.get(waiter))
			return c != nil && c.Reason == tagger.ReasonSynced, fmt.Sprintf("%+v", c)
		})
		want := map[string]string{"Team": "Ops"}
		if got := h.eniTags(eni.ID); got["Team"] != "Ops" || got[tagger.HashTag] != tagplan.Hash(want) {
			t.Fatalf("%s: ENI tags %v, want the waiting pod's %v and its token", waiter, got, want)
		}
	}
}
