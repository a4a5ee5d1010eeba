package nodeeni_test

import (
	"fmt"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// A key rotation keeps every ENI trusted: with a key added, the operator
// signs its ENIs again with it (one CreateTags each, nothing detached or
// deleted), after which the old key can go.
func TestKeyRotationKeepsENIsTrusted(t *testing.T) {
	h, _ := nodesHarness(t, 2, "rotate")
	o := h.options()
	o.Keys = testenv.KeyRing("k1")
	first := h.start(o)
	h.createNodeENI("rotate", h.multusSpec(map[string]string{"ng": "rotate"}))
	h.ready("rotate", 2)
	_ = first.Stop()
	h.Emulator.ResetCounts()

	o.Keys = testenv.KeyRing("k1", "k2")
	m := h.start(o)
	h.eventually("every ENI signed with k2", waitFor, func() (bool, string) {
		k1 := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proven_enis", map[string]string{"key": "k1"})
		k2 := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proven_enis", map[string]string{"key": "k2"})
		return k1 == 0 && k2 == 2, fmt.Sprintf("k1 %v, k2 %v", k1, k2)
	})
	h.ready("rotate", 2)
	if n := h.calls("CreateTags"); n != 2 {
		t.Errorf("%d CreateTags, want 2 (one new proof per ENI)", n)
	}
	for _, a := range []string{"CreateNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls during the rotation, want 0", n, a)
		}
	}
	_ = m.Stop()

	// The old key removed: every ENI still proven.
	h.Emulator.ResetCounts()
	o.Keys = testenv.KeyRing("k2")
	m = h.start(o)
	h.eventually("every ENI proven by k2 alone", waitFor, func() (bool, string) {
		k2 := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proven_enis", map[string]string{"key": "k2"})
		bad := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedBadProof})
		return k2 == 2 && bad == 0, fmt.Sprintf("k2 %v, bad proofs %v", k2, bad)
	})
	h.ready("rotate", 2)
	if _, writes := h.totalCalls(); writes["CreateTags"]+writes["CreateNetworkInterface"]+writes["DeleteNetworkInterface"] != 0 {
		t.Errorf("writes after the old key went: %v", writes)
	}
}
