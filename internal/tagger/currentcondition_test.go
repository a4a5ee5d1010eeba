package tagger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// The condition tells the current cause only: these tests make a cause go
// away and check that the condition follows.

// waitNoCondition waits until the pod carries no tagger condition, and
// checks that the other conditions are untouched.
func (h *harness) waitNoCondition(name string) {
	h.t.Helper()
	var last *corev1.Pod
	h.eventually("pod "+name+" without the "+tagger.ConditionType+" condition", func() bool {
		last = h.get(name)
		return condition(last) == nil
	}, func() string { return "conditions: " + condString(last) })
	if len(last.Status.Conditions) != 1 || last.Status.Conditions[0].Type != corev1.PodReady {
		h.t.Fatalf("removing the tagger's condition touched the others: %s", condString(last))
	}
}

func condString(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, string(c.Type)+"="+string(c.Status)+"/"+c.Reason+": "+c.Message)
	}
	return strings.Join(parts, "; ")
}

// A pod whose ENI is deleted leaves Synced at the next inventory refresh:
// ENINotFound, naming the ENI that is gone.
func TestSyncedLeftWhenTheENIIsDeleted(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	eni := h.loaded.NetworkInterfaces[0]
	o := h.options()
	o.InventoryInterval = 500 * time.Millisecond
	h.startManager(o)
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("web", tagger.ReasonSynced, eni.ID)
	if err := h.ec2Client(nil).DeleteENI(context.Background(), eni.ID); err != nil {
		t.Fatal(err)
	}
	c := h.waitCondition("web", tagger.ReasonENINotFound, eni.ID+", which carried the pod's tags, is gone")
	if c.Status != corev1.ConditionFalse {
		t.Fatalf("condition %+v", c)
	}
}

// An invalid annotation that is removed takes its InvalidTags condition
// with it, whether the operator sees the removal or was down meanwhile.
func TestInvalidTagsConditionGoesWithTheAnnotation(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	h.startManager(h.options())
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "aws:x=1"})
	h.waitCondition("web", tagger.ReasonInvalidTags, "reserved")
	h.annotate("web", "")
	h.waitNoCondition("web")

	// Removed while the operator is down: the restarted operator removes
	// the condition too.
	h.pod("api", h.loaded.NetworkInterfaces[1].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "aws:x=1"})
	h.waitCondition("api", tagger.ReasonInvalidTags, "reserved")
	h.stopManager()
	h.annotate("api", "")
	h.startManager(h.options())
	h.waitNoCondition("api")
	if n := h.calls()["CreateTags"] + h.calls()["DeleteTags"]; n != 0 {
		t.Fatalf("%d tag writes", n)
	}
}

// A DryRun condition does not outlive the dry run: restarted without
// --dry-run, a pod whose annotation was removed meanwhile loses it, and
// an annotated pod gets Synced.
func TestDryRunConditionEndsWithTheDryRun(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	o := h.options()
	o.DryRun = true
	h.startManager(o)
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.pod("api", h.loaded.NetworkInterfaces[1].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Api"})
	h.waitCondition("web", tagger.ReasonDryRun, `would set Team="Dev"`)
	h.waitCondition("api", tagger.ReasonDryRun, `would set Team="Api"`)

	// Still in dry run: removing the annotation ends "would set" at once.
	h.annotate("web", "")
	h.waitNoCondition("web")

	h.stopManager()
	h.annotate("api", "")
	o.DryRun = false
	h.startManager(o)
	h.waitNoCondition("api")
}

// The Synced message quotes the hash that is on the ENI and in the pod's
// last-applied-hash, also after a key removal (which keeps the token).
func TestSyncedQuotesTheHashOnTheENI(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	h.startManager(h.options())
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
	h.waitCondition("web", tagger.ReasonSynced, "hash "+tagplan.Hash(map[string]string{"Team": "Dev", "Cost": "1"}))
	h.annotate("web", "Team=Dev")
	h.eventually("Cost removed from the ENI", func() bool { _, ok := h.eniTags(eni.ID)["Cost"]; return !ok }, nil)
	onENI := h.eniTags(eni.ID)[tagger.HashTag]
	c := h.waitCondition("web", tagger.ReasonSynced, "1 tags in sync")
	p := h.get("web")
	if !strings.Contains(c.Message, "hash "+onENI) || p.Annotations[tagger.LastAppliedHashAnnotation] != onENI {
		t.Fatalf("message %q, last-applied-hash %q, hash on the ENI %q", c.Message, p.Annotations[tagger.LastAppliedHashAnnotation], onENI)
	}
}
