package nodeeni_test

import (
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
)

// EC2 is eventually consistent: right after CreateNetworkInterface, other
// calls may answer InvalidNetworkInterfaceID.NotFound, and Describe may
// not list the new ENI (the inventory refreshes every 300ms here, so it
// drops the ENI from the view several times). An attach refused that way
// is tried again; the ENI is not taken for gone and no second ENI is
// created for the same node and subnet.
func TestNewENIsNotYetVisibleAreAttachedNotDuplicated(t *testing.T) {
	h := newHarness(t, threeNodes())
	for i, zone := range []string{"us-east-1a", "us-east-1a", "us-east-1b"} {
		h.addNode("n"+string(rune('0'+i)), h.instance(i), zone, map[string]string{"ng": "multi-eni"})
	}
	const delay = 1500 * time.Millisecond
	if err := h.Emulator.Configure(emulator.Config{VisibilityDelay: &emulator.Duration{Duration: delay}}); err != nil {
		t.Fatal(err)
	}
	h.start(h.options())
	spec := h.spec(map[string]string{"ng": "multi-eni"})
	spec.SubnetNames = []string{"multus-a", "multus-b"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("late", spec)
	ne := h.ready("late", 3)

	attach := h.Emulator.Counts()["AttachNetworkInterface"]
	if attach.Errors["InvalidNetworkInterfaceID.NotFound"] == 0 {
		t.Fatalf("no attach was answered NotFound, so the test did not exercise eventual consistency: %+v", attach)
	}
	time.Sleep(delay) // every ENI ever created is visible now
	enis := h.enis()
	if len(enis) != 3 {
		t.Fatalf("%d ENIs in EC2, want 3 (one per node): %+v", len(enis), enis)
	}
	attached := map[string]bool{}
	for _, a := range ne.Status.Attachments {
		attached[a.ENIID] = true
	}
	for _, e := range enis {
		if e.Attachment == nil || !attached[e.ID] {
			t.Errorf("ENI %s of node %s is not attached or not in the status", e.ID, e.Tags[nodeeni.TagNode])
		}
	}
	if n := h.calls("DeleteNetworkInterface"); n != 0 {
		t.Errorf("%d DeleteNetworkInterface calls, want 0", n)
	}
	t.Logf("3 ENIs attached with a %v visibility delay: %d CreateNetworkInterface (replays of the same ClientToken included), %d AttachNetworkInterface (%d answered NotFound)",
		delay, h.calls("CreateNetworkInterface"), attach.Calls, attach.Errors["InvalidNetworkInterfaceID.NotFound"])
}
