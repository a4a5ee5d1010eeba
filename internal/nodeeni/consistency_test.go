package nodeeni_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
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

	// The proof's CreateTags comes first, so it is the call most often
	// answered NotFound.
	attach, tag := h.Emulator.Counts()["AttachNetworkInterface"], h.Emulator.Counts()["CreateTags"]
	if attach.Errors["InvalidNetworkInterfaceID.NotFound"]+tag.Errors["InvalidNetworkInterfaceID.NotFound"] == 0 {
		t.Fatalf("no attach or proof was answered NotFound, so the test did not exercise eventual consistency: %+v %+v", attach, tag)
	}
	time.Sleep(delay) // every ENI ever created is visible now
	enis := h.enis()
	if len(enis) != 3 {
		t.Fatalf("%d ENIs in EC2, want 3 (one per node): %+v", len(enis), enis)
	}
	attached := map[string]bool{}
	for _, a := range h.attachments(ne.Name) {
		attached[a.ENIID] = true
	}
	for _, e := range enis {
		if e.Attachment == nil || !attached[e.ID] {
			t.Errorf("ENI %s of node %s is not attached or not in the status", e.ID, e.Tags[eniplan.TagNode])
		}
	}
	if n := h.calls("DeleteNetworkInterface"); n != 0 {
		t.Errorf("%d DeleteNetworkInterface calls, want 0", n)
	}
	t.Logf("3 ENIs attached with a %v visibility delay: %d CreateNetworkInterface (replays of the same ClientToken included), %d AttachNetworkInterface (%d answered NotFound)",
		delay, h.calls("CreateNetworkInterface"), attach.Calls, attach.Errors["InvalidNetworkInterfaceID.NotFound"])
}

// Killed right after CreateNetworkInterface succeeded, restarted while
// EC2 does not show the new ENIs yet. The restarted
// process cannot tell a create in flight from one never sent, so it
// creates again with new nonces; once EC2 shows the first ENIs, their
// recorded nonces prove them the operator's and each is deleted as a
// duplicate: nothing is left behind.
func TestCrashDuringVisibilityLagLeavesNoENI(t *testing.T) {
	const nodes = 3
	h, names := nodesHarness(t, nodes, "lag")
	const delay = 4 * time.Second
	if err := h.Emulator.Configure(emulator.Config{VisibilityDelay: &emulator.Duration{Duration: delay}}); err != nil {
		t.Fatal(err)
	}
	first := h.start(h.options())
	spec := h.spec(map[string]string{"ng": "lag"})
	spec.SubnetNames = []string{"multus-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("lag", spec)
	h.eventually("every ENI created", waitFor, func() (bool, string) {
		n := h.Emulator.Counts()["CreateNetworkInterface"]
		return n.Calls >= nodes, fmt.Sprintf("%+v", n) // no faults: every call succeeds
	})
	_ = first.Stop()
	h.start(h.options())
	h.ready("lag", nodes)
	// The restarted process's own creates show once the delay passes too:
	// wait for every ENI made but one per node to be deleted.
	var made, deleted int
	h.eventually("every ENI made but the kept ones deleted", waitFor, func() (bool, string) {
		made, deleted = 0, 0
		for _, c := range h.Emulator.Calls() {
			switch {
			case c.Code != "":
			case c.Action == "CreateNetworkInterface":
				made++
			case c.Action == "DeleteNetworkInterface":
				deleted++
			}
		}
		return deleted == made-nodes, fmt.Sprintf("%d made, %d deleted", made, deleted)
	})
	h.exactlyOnePerKey(names, []string{h.Subnets["multus-a"]})
	t.Logf("restarted within a %v visibility delay: %d CreateNetworkInterface calls made ENIs, %d deleted", delay, made, deleted)
}
