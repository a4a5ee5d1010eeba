package nodeeni_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Issue 37, point 1: an ENI carries its proof from its create. A rollout
// writes no tag beside the creates: no CreateTags at all.
func TestENIsAreBornProven(t *testing.T) {
	const nodes = 3
	h, names := nodesHarness(t, nodes, "born")
	h.start(h.options())
	spec := h.spec(map[string]string{"ng": "born"})
	spec.SubnetNames = []string{"multus-a", "storage-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("born", spec)
	h.ready("born", nodes)
	h.exactlyOnePerKey(names, []string{h.Subnets["multus-a"], h.Subnets["storage-a"]})
	if n := h.calls("CreateTags"); n != 0 {
		t.Errorf("%d CreateTags during the rollout, want 0: the proof rides in the create", n)
	}
	for _, c := range h.Emulator.Calls() {
		if c.Action != "CreateNetworkInterface" {
			continue
		}
		if !strings.HasPrefix(createTag(c, eniplan.TagProof), "v2.") || createTag(c, eniplan.TagNonce) == "" {
			t.Errorf("a create without its birth proof and nonce: %v", c.Params)
		}
	}
}

// createTag is the value a CreateNetworkInterface call's tag
// specification gives a key.
func createTag(c emulator.Call, key string) string {
	for k, vs := range c.Params {
		if strings.HasPrefix(k, "TagSpecification.1.Tag.") && strings.HasSuffix(k, ".Key") && len(vs) == 1 && vs[0] == key {
			if v := c.Params[strings.TrimSuffix(k, ".Key")+".Value"]; len(v) == 1 {
				return v[0]
			}
		}
	}
	return ""
}

// Issue 37, point 2 (crashScenario), against an EC2 that ignores
// ClientToken. Killed after the creates' answers, the attaches failing:
// the ENIs are adopted by their nonces, none made again.
func TestCrashAfterCreateAnswerIgnoringTokens(t *testing.T) {
	crashScenario(t, "AttachNetworkInterface", false, true)
}

// Every create's answer lost, the ENI made: each try is an ENI with a
// nonce of its own; one per (node, subnet) is kept, the others deleted.
func TestCrashAfterLostCreateAnswerIgnoringTokens(t *testing.T) {
	crashScenario(t, "CreateNetworkInterface", true, true)
}

// Killed after the attaches took effect, their answers lost.
func TestCrashAfterAttachIgnoringTokens(t *testing.T) {
	crashScenario(t, "AttachNetworkInterface", true, true)
}

// A copy of a crash leftover's whole tag set (proof and nonce included)
// onto a foreign ENI of the same subnet: two ENIs show one nonce, so
// neither is acted on; the node gets a new ENI, and the foreign one is
// never touched.
func TestCopiedLeftoverIsNotEnough(t *testing.T) {
	const nodes = 1
	h, _ := nodesHarness(t, nodes, "copy")
	if err := h.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{
		"AttachNetworkInterface": {ErrorRate: 1, ErrorCode: "InternalError"}}}); err != nil {
		t.Fatal(err)
	}
	first := h.start(h.options())
	spec := h.spec(map[string]string{"ng": "copy"})
	spec.SubnetNames = []string{"multus-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("copy", spec)
	h.eventually("an attach tried", waitFor, func() (bool, string) {
		return h.calls("AttachNetworkInterface") >= 1, ""
	})
	_ = first.Stop()
	if err := h.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{}}); err != nil {
		t.Fatal(err)
	}
	left := h.enis()
	if len(left) != 1 {
		t.Fatalf("%d ENIs left, want 1", len(left))
	}
	foreign, err := h.ec2Client().CreateENI(context.Background(), awstypes.CreateENIInput{SubnetID: left[0].SubnetID, Tags: maps.Clone(left[0].Tags)})
	if err != nil {
		t.Fatal(err)
	}
	h.Emulator.ResetCounts()
	h.start(h.options())
	h.ready("copy", nodes)
	h.onlyReads(foreign.ID, left[0].ID)
	got, err := h.ec2Client().GetENI(context.Background(), foreign.ID)
	if err != nil || got.Attachment != nil {
		t.Fatalf("the foreign ENI: %+v, %v; want it untouched", got, err)
	}
}
