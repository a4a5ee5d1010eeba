package nodeeni_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// The review's three copies of a working ENI's complete tag set, proof
// included, onto ENIs someone else created: one attached to the same node
// at a free index, a detached duplicate, and a detached orphan whose
// created-at is backdated past the collector's grace. The operator
// changes none of them (no call names them but reads), keeps its own ENI
// attached, reports them (CopiedNonce, BadProof), and still collects a
// genuine leak.
func TestCopiedOwnershipTags(t *testing.T) {
	h, _ := nodesHarness(t, 1, "copied")
	o := h.options()
	o.CollectorGracePeriod = 2 * resync
	m := h.startStepped(o)
	h.createNodeENI("copied", h.multusSpec(map[string]string{"ng": "copied"}))
	h.ready("copied", 1)
	genuine := h.enis()[0]
	if genuine.Tags[eniplan.TagProof] == "" {
		t.Fatalf("the operator's ENI carries no proof: %v", genuine.Tags)
	}

	backdated := maps.Clone(genuine.Tags)
	backdated[eniplan.TagCreatedAt] = time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	leak := map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "gone", eniplan.TagNodeENIUID: "6f0c1d2e-dead-4bee-8000-000000000000",
		eniplan.TagNode: "n9", eniplan.TagInstance: h.instance(0), eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
		eniplan.TagCreatedAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
	res, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "multus-a", Tags: genuine.Tags, Instance: h.instance(0), DeviceIndex: 2}, // attached at a free index
		{Subnet: "multus-a", Tags: genuine.Tags},                                          // detached duplicate
		{Subnet: "multus-a", Tags: backdated},                                             // detached, backdated
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", Tags: leak}),             // a genuine leak
	}})
	if err != nil {
		t.Fatal(err)
	}
	foreign := []string{res.NetworkInterfaces[0].ID, res.NetworkInterfaces[1].ID, res.NetworkInterfaces[2].ID}
	leaked := res.NetworkInterfaces[3].ID
	h.Emulator.ResetCounts()

	h.eventuallySteps("the genuine leak collected", 6, func() (bool, string) {
		for _, e := range h.enis() {
			if e.ID == leaked {
				return false, "still there"
			}
		}
		return true, ""
	})
	// The exact copies show a nonce the genuine ENI's record binds; the
	// backdated one's proof no longer verifies.
	h.eventuallySteps("the copies reported", 3, func() (bool, string) {
		copied := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedCopied})
		bad := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedBadProof})
		return copied == 2 && bad == 1, fmt.Sprintf("CopiedNonce %v, BadProof %v", copied, bad)
	})
	h.steps(6) // several passes of the controller and the collector
	h.onlyReads(foreign...)
	list := h.enis()
	var still bool
	for _, e := range list {
		if e.ID == genuine.ID {
			still = e.Attachment != nil && e.Attachment.Status == "attached" && e.Attachment.DeviceIndex == 1
		}
	}
	if !still {
		t.Errorf("the genuine ENI %s is no longer attached at index 1: %+v", genuine.ID, list)
	}
	if n := len(list); n != 4 {
		t.Errorf("%d ENIs carry the cluster's tag, want 4 (the genuine one and the three copies)", n)
	}
	h.ready("copied", 1)
	if n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_proven_enis", map[string]string{"key": testenv.OwnershipKeys().Current()}); n != 1 {
		t.Errorf("proven ENIs by the current key: %v, want 1 (the genuine one)", n)
	}
}
