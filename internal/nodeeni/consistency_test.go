package nodeeni_test

import (
	"fmt"
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
			t.Errorf("ENI %s of node %s is not attached or not in the status", e.ID, e.Tags[nodeeni.TagNode])
		}
	}
	if n := h.calls("DeleteNetworkInterface"); n != 0 {
		t.Errorf("%d DeleteNetworkInterface calls, want 0", n)
	}
	t.Logf("3 ENIs attached with a %v visibility delay: %d CreateNetworkInterface (replays of the same ClientToken included), %d AttachNetworkInterface (%d answered NotFound)",
		delay, h.calls("CreateNetworkInterface"), attach.Calls, attach.Errors["InvalidNetworkInterfaceID.NotFound"])
}

// The window eventual consistency left open: killed right after
// CreateNetworkInterface succeeded, restarted a second later while EC2
// does not show the new ENIs yet. The restarted process's create carries
// the same ClientToken but another creation-time tag, so EC2 refuses it
// as a mismatch, and no Describe finds the ENI. That is no proof the ENI
// is gone: the create is tried again until it shows (within the
// visibility window), and no second ENI is made.
func TestCrashDuringVisibilityLagMakesNoSecondENI(t *testing.T) {
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
	// The creation-time tag has a resolution of a second: restart in
	// another second, so the restarted process's creates differ.
	time.Sleep(1100 * time.Millisecond)
	h.start(h.options())
	h.ready("lag", nodes)
	h.exactlyOnePerKey(names, []string{h.Subnets["multus-a"]})
	tokens := map[string]bool{}
	for _, c := range h.Emulator.Calls() {
		if c.Action == "CreateNetworkInterface" && c.Code == "" {
			tokens[c.Params["ClientToken"][0]] = true
		}
	}
	if len(tokens) != nodes {
		t.Errorf("%d ClientTokens made ENIs, want %d: the restart took an unseen ENI for gone", len(tokens), nodes)
	}
	if d := h.calls("DeleteNetworkInterface"); d != 0 {
		t.Errorf("%d deletes: a duplicate was made and cleaned up", d)
	}
	t.Logf("restarted within a %v visibility delay: %d CreateNetworkInterface calls (%d refused as a mismatch)", delay,
		h.calls("CreateNetworkInterface"), h.Emulator.Counts()["CreateNetworkInterface"].Errors["IdempotentParameterMismatch"])
}
