package nodeeni_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Issue 37, point 4: the key Secret lost and replaced by a new key while
// proven ENIs exist. Every ENI is named by its ENINode entry, which only
// the operator writes, so each is signed again with the new key (a
// restore, said loudly); none is abandoned, detached or deleted. A
// genuine ENI whose proof tag was removed is restored the same way.
func TestKeyLossOrphansNoENI(t *testing.T) {
	h, _ := nodesHarness(t, 2, "keyloss")
	o := h.options()
	o.Keys = testenv.KeyRing("k1")
	first := h.start(o)
	h.createNodeENI("keyloss", h.multusSpec(map[string]string{"ng": "keyloss"}))
	h.ready("keyloss", 2)
	_ = first.Stop()
	h.Emulator.ResetCounts()

	o.Keys = testenv.KeyRing("k9") // the old key is gone
	m := h.start(o)
	h.eventually("every ENI signed with the new key", waitFor, func() (bool, string) {
		k9 := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proven_enis", map[string]string{"key": "k9"})
		restored := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proofs_restored_total", nil)
		return k9 == 2 && restored == 2, fmt.Sprintf("proven by k9 %v, restored %v", k9, restored)
	})
	ne := h.ready("keyloss", 2)
	if c := condition(ne, v1alpha1.ConditionOwnershipVerified); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("OwnershipVerified after the restore: %+v", c)
	}
	for _, a := range []string{"CreateNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls after the key was lost, want 0", n, a)
		}
	}
	h.eventually("a ProofRestored event naming the recovery", waitFor, func() (bool, string) {
		notes := h.events("keyloss")["ProofRestored"]
		return len(notes) > 0 && strings.Contains(notes[0], "docs/operations.md#ownership-keys"), fmt.Sprint(notes)
	})

	// A genuine ENI's proof tag removed (by whoever may tag ENIs).
	enis := h.enis()
	e := enis[0]
	if err := h.ec2Client().DeleteTags(context.Background(), e.ID, map[string]string{eniplan.TagProof: e.Tags[eniplan.TagProof]}); err != nil {
		t.Fatal(err)
	}
	h.Emulator.ResetCounts()
	h.eventually("the removed proof restored", waitFor, func() (bool, string) {
		got, err := h.ec2Client().GetENI(context.Background(), e.ID)
		return err == nil && got.Tags[eniplan.TagProof] != "", fmt.Sprintf("%v %v", got.Tags, err)
	})
	h.ready("keyloss", 2)
	if n := len(h.enis()); n != 2 {
		t.Errorf("%d ENIs, want the 2 kept", n)
	}
	for _, a := range []string{"DetachNetworkInterface", "DeleteNetworkInterface"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls after the proof was removed, want 0", n, a)
		}
	}
}
