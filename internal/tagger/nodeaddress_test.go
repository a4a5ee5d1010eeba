package tagger_test

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// hostPod creates a running hostNetwork pod at ip (the node's address).
func (h *harness) hostPod(name, ip string, annotations map[string]string) {
	h.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: annotations},
		Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
	if !testenv.CreatePod(h.t, h.k8s, p, testenv.Running(ip)) {
		h.t.FailNow()
	}
}

// A hostNetwork pod shares its node's address, so its ENI is the node's
// primary ENI (finding 5 of issue 25: a tags annotation on one got that
// ENI tagged). Without an annotation nothing happens at all; with one
// the pod is told why it is skipped, without any EC2 call; and the
// condition goes when the annotation does.
func TestHostNetworkPodIsSkippedWithAReason(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a"}}})
	node := h.loaded.Instances[0]
	before := h.eniTags(node.PrimaryENI)
	h.startManager(h.options())

	h.hostPod("plain", node.PrivateIP, nil)
	time.Sleep(500 * time.Millisecond)
	if n := h.reconciles(); n != 0 {
		t.Fatalf("%v reconciles of an unannotated hostNetwork pod", n)
	}
	if condition(h.get("plain")) != nil {
		t.Fatal("an unannotated hostNetwork pod got a condition")
	}

	h.hostPod("host", node.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	cond := h.waitCondition("host", tagger.ReasonHostNetwork, "shares its node's network")
	if cond.Status != corev1.ConditionFalse {
		t.Fatalf("condition status %s", cond.Status)
	}
	h.waitEvent("host", "Warning/"+tagger.ReasonHostNetwork)
	time.Sleep(300 * time.Millisecond) // a stray second reconcile would show in the counters
	if n := h.total(); n != 0 {
		t.Fatalf("a hostNetwork pod cost %d EC2 calls: %v", n, h.calls())
	}
	if got := h.eniTags(node.PrimaryENI); !maps.Equal(got, before) {
		t.Fatalf("the node's primary ENI's tags changed: %v, were %v", got, before)
	}

	h.annotate("host", "")
	h.eventually("condition removed with the annotation", func() bool { return condition(h.get("host")) == nil }, nil)
}

// A pod that is not on the host network but whose IP is the primary
// address of an instance's primary ENI (device index 0) is refused: the
// node's own interface is never a pod's to tag, whatever the pod's
// status claims. The check needs the ENI, so one lookup is made; no tag
// is written.
func TestPodAtTheNodesAddressIsRefused(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a"}}})
	node := h.loaded.Instances[0]
	before := h.eniTags(node.PrimaryENI)
	h.startManager(h.options())
	h.pod("squatter", node.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	cond := h.waitCondition("squatter", tagger.ReasonNodeAddress, node.PrimaryENI)
	if cond.Status != corev1.ConditionFalse {
		t.Fatalf("condition status %s", cond.Status)
	}
	h.waitEvent("squatter", "Warning/"+tagger.ReasonNodeAddress)
	time.Sleep(300 * time.Millisecond)
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("tag writes for a pod at the node's address: %v", c)
	}
	if got := h.eniTags(node.PrimaryENI); !maps.Equal(got, before) {
		t.Fatalf("the node's primary ENI's tags changed: %v, were %v", got, before)
	}
	if _, ok := h.rec.Ledger().Get(h.ns + "/squatter"); ok {
		t.Fatal("a pod at the node's address was recorded in the ledger")
	}
}
