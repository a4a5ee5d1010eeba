package tagger_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// Invalid annotations are refused with the exact problem, a Warning
// event and no AWS call at all.
func TestInvalidAnnotationsAreRefusedWithoutAWSCalls(t *testing.T) {
	h := newHarness(t, branchWorld(12))
	o := h.options()
	o.DenyKeys = []string{"Secret*"}
	h.startManager(o)
	cases := []struct{ annotation, message string }{
		{`{"Team":"Dev"`, "malformed JSON"},
		{`{"Cost":1}`, `the value of key "Cost" must be a JSON string, got a number`},
		{`=Dev`, "has an empty key"},
		{`{"":"x"}`, "a tag key is empty"},
		{`Team=Dev,Team=Ops`, `duplicate key "Team"`},
		{`{"a":"1","a":"2"}`, `duplicate key "a"`},
		{manyTags(50), "50 tags asked for"},
		{strings.Repeat("k", 128) + "=v", "key is 128 characters, the limit is 127"},
		{"k=" + strings.Repeat("v", 257), "value is 257 characters, the limit is 256"},
		{"AWS:Owner=me", "reserved"},
		{"Kubernetes.io/Cluster/x=owned", "reserved"},
		{"EKS:x=1", "reserved"},
		{"eni-tagger.io/hash=x", "reserved"},
		{"SecretKey=x", "not allowed by the operator's tag policy"},
	}
	for i, c := range cases {
		h.pod(fmt.Sprintf("bad-%d", i), h.loaded.NetworkInterfaces[i%12].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: c.annotation})
	}
	for i, c := range cases {
		name := fmt.Sprintf("bad-%d", i)
		cond := h.waitCondition(name, tagger.ReasonInvalidTags, c.message)
		if cond.Status != corev1.ConditionFalse {
			t.Errorf("%s: condition status %s", name, cond.Status)
		}
		h.waitEvent(name, "Warning/InvalidTags")
	}
	if n := h.total(); n != 0 {
		t.Fatalf("invalid annotations cost %d EC2 calls: %v", n, h.calls())
	}
}

func manyTags(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d=v", i)
	}
	return strings.Join(parts, ",")
}

// The 50-tag limit counts the tags already on the ENI; nothing is written.
func TestTagLimitCountsExistingTags(t *testing.T) {
	existing := map[string]string{}
	for i := range 47 {
		existing[fmt.Sprintf("other-%d", i)] = "x"
	}
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Tags: existing}}})
	h.startManager(h.options())
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "a=1,b=2,c=3"})
	h.waitCondition("web", tagger.ReasonInvalidTags, "would carry 51 tags")
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("wrote tags: %v", c)
	}
}

// Removing or emptying the annotation removes exactly the operator's
// tags; tags others set on the ENI stay.
func TestRemovingTheAnnotationRemovesOnlyOurTags(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	h.startManager(h.options())
	for i, empty := range []bool{false, true} {
		name, eni := fmt.Sprintf("web-%d", i), h.loaded.NetworkInterfaces[i]
		h.pod(name, eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
		h.waitCondition(name, tagger.ReasonSynced, "")
		if err := h.ec2Client(nil).CreateTags(context.Background(), eni.ID, map[string]string{"Owner": "ops"}); err != nil {
			t.Fatal(err)
		}
		h.emu.ResetCounts()
		if empty {
			h.annotate(name, " ") // blank: asks for no tags
		} else {
			h.annotate(name, "")
		}
		h.waitCondition(name, tagger.ReasonRemoved, "")
		if c := h.calls(); c["DeleteTags"] != 1 || c["CreateTags"] != 0 {
			t.Fatalf("%s: calls %v, want one DeleteTags", name, c)
		}
		want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni", "Owner": "ops"}
		if got := h.eniTags(eni.ID); !maps.Equal(got, want) {
			t.Fatalf("%s: ENI tags %v, want %v", name, got, want)
		}
		if p := h.get(name); p.Annotations[tagger.LastAppliedTagsAnnotation] != "" {
			t.Fatalf("%s: last-applied annotation left: %v", name, p.Annotations)
		}
	}
}

func (h *harness) deletePod(name string) {
	h.t.Helper()
	p := &corev1.Pod{}
	p.Namespace, p.Name = h.ns, name
	if err := h.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) gone(name string) bool {
	var p corev1.Pod
	return apierrors.IsNotFound(h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &p))
}

// By default no finalizer: a pod deleted while the operator is down is
// gone at once, and the restarted operator removes its tags (from the
// ledger), by value, leaving others' tags.
func TestPodDeletedWhileOperatorDownIsCleanedUpAfterRestart(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	h.startManager(h.options())
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
	h.waitCondition("web", tagger.ReasonSynced, "")
	if len(h.get("web").Finalizers) != 0 {
		t.Fatal("a finalizer was added without --pod-finalizer")
	}
	h.eventually("ledger written", func() bool { return h.ledgerEntries() == 1 }, nil)
	h.stopManager()
	// Someone else takes over one of the keys meanwhile: it stays.
	if err := h.ec2Client(nil).CreateTags(context.Background(), eni.ID, map[string]string{"Cost": "2"}); err != nil {
		t.Fatal(err)
	}
	h.deletePod("web")
	if !h.gone("web") {
		t.Fatal("pod deletion blocked while the operator is down")
	}
	h.startManager(h.options())
	h.eventually("tags removed", func() bool { _, ok := h.eniTags(eni.ID)["Team"]; return !ok }, nil)
	want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni", "Cost": "2"}
	if got := h.eniTags(eni.ID); !maps.Equal(got, want) {
		t.Fatalf("ENI tags %v, want %v", got, want)
	}
	h.eventually("ledger entry dropped", func() bool { return h.ledgerEntries() == 0 }, nil)
}

// With the manager running, deletion removes the tags too (no finalizer).
func TestPodDeletionRemovesTags(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	h.startManager(h.options())
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("web", tagger.ReasonSynced, "")
	h.emu.ResetCounts()
	h.deletePod("web")
	h.eventually("tags removed", func() bool { _, ok := h.eniTags(eni.ID)["Team"]; return !ok }, nil)
	if h.eniTags(eni.ID)[tagger.HashTag] != "" {
		t.Fatal("hash tag left behind")
	}
}

// --pod-finalizer: tags go before the pod object does; the uninstall
// path removes the finalizers.
func TestFinalizerMode(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	o := h.options()
	o.PodFinalizer = true
	h.startManager(o)
	for i := range 2 {
		h.pod(fmt.Sprintf("web-%d", i), h.loaded.NetworkInterfaces[i].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
		h.waitCondition(fmt.Sprintf("web-%d", i), tagger.ReasonSynced, "")
	}
	if fs := h.get("web-0").Finalizers; len(fs) != 1 || fs[0] != tagger.Finalizer {
		t.Fatalf("finalizers %v", fs)
	}
	h.deletePod("web-0")
	h.eventually("pod gone", func() bool { return h.gone("web-0") }, nil)
	if _, ok := h.eniTags(h.loaded.NetworkInterfaces[0].ID)["Team"]; ok {
		t.Fatal("the pod went before its tags")
	}
	// Uninstall: operator stopped, finalizers removed, deletion not blocked.
	h.stopManager()
	n, err := tagger.RemoveFinalizers(context.Background(), h.k8s)
	if err != nil || n != 1 {
		t.Fatalf("RemoveFinalizers = %d, %v", n, err)
	}
	h.deletePod("web-1")
	h.eventually("pod gone", func() bool { return h.gone("web-1") }, nil)
}

// ledgerEntries counts records in the ledger ConfigMaps.
func (h *harness) ledgerEntries() int {
	var list corev1.ConfigMapList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.opsNS)); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "eni-tagger-cache-") {
			n += len(cm.Data)
		}
	}
	return n
}

// Dry run writes nothing that changes a later real run.
func TestDryRunThenRealRun(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	o := h.options()
	o.DryRun = true
	h.startManager(o)
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("web", tagger.ReasonDryRun, `would set Team="Dev"`)
	h.waitEvent("web", "Normal/DryRun")
	time.Sleep(300 * time.Millisecond)
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("dry run wrote: %v", c)
	}
	if p := h.get("web"); p.Annotations[tagger.LastAppliedTagsAnnotation] != "" || h.ledgerEntries() != 0 {
		t.Fatal("dry run recorded applied tags")
	}
	o.DryRun = false
	h.startManager(o)
	h.waitCondition("web", tagger.ReasonSynced, "")
	if h.eniTags(eni.ID)["Team"] != "Dev" {
		t.Fatal("the real run did not apply the tags")
	}
}

// Pods and ENIs tagged by k8s-eni-tagger are adopted as they are: no
// conflict, no write.
func TestAdoptsK8sENITaggerBookkeeping(t *testing.T) {
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch",
		Tags: map[string]string{"Team": "Dev", tagger.HashTag: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}})
	h.startManager(h.options())
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{
		tagger.DefaultAnnotationKey:      "Team=Dev",
		tagger.LastAppliedTagsAnnotation: `{"Team":"Dev"}`,
		tagger.LastAppliedHashAnnotation: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	})
	h.waitCondition("web", tagger.ReasonSynced, "")
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("adoption wrote: %v", c)
	}
}
