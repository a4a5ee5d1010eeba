package nodeeni_test

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// exactlyOnePerKey checks the emulator holds one attached ENI per (node,
// subnet) for the given nodes and subnets, and nothing else.
func (h *harness) exactlyOnePerKey(nodes []string, subnets []string) {
	h.t.Helper()
	h.waitENIs(len(nodes) * len(subnets))
	seen := map[string]int{}
	for _, e := range h.enis() {
		seen[e.Tags[eniplan.TagNode]+"/"+e.SubnetID]++
	}
	for _, n := range nodes {
		for _, s := range subnets {
			if seen[n+"/"+s] != 1 {
				h.t.Fatalf("%s/%s has %d ENIs, want 1 (all: %v)", n, s, seen[n+"/"+s], seen)
			}
		}
	}
}

// crashScenario starts a manager while fault makes action fail (after it
// took effect when afterApply), kills the manager once the action was
// tried twice for every ENI (or every ENI is attached all the same), and
// restarts one without the fault. With
// ignoreTokens, EC2 does not honour ClientToken (moto; EC2 after its
// idempotency window). Either way, after the restart each (node, subnet)
// has exactly one ENI, no ENI is made again, every other ENI the first
// process made is deleted (the nonces the ENINodes recorded prove them
// the operator's), and the records are pruned.
func crashScenario(t *testing.T, action string, afterApply, ignoreTokens bool) {
	const nodes = 3
	h, names := nodesHarness(t, nodes, "crash")
	if err := h.Emulator.Configure(emulator.Config{IgnoreClientToken: &ignoreTokens, Faults: map[string]emulator.Fault{
		action: {ErrorRate: 1, ErrorCode: "InternalError", AfterApply: afterApply}}}); err != nil {
		t.Fatal(err)
	}
	first := h.start(h.options())
	spec := h.spec(map[string]string{"ng": "crash"})
	spec.SubnetNames = []string{"multus-a", "storage-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("crash", spec)
	// Where a failed action took effect, the operator may find its result
	// in EC2 and finish without trying again: that is a fine point to die.
	h.eventually(action+" tried twice for every ENI, or every ENI attached", waitFor, func() (bool, string) {
		n, attached := h.calls(action), 0
		for _, e := range h.enis() {
			if e.Attachment != nil && e.Attachment.Status == "attached" {
				attached++
			}
		}
		return n >= 2*nodes*2 || n >= 2*nodes && attached >= 2*nodes, fmt.Sprintf("%d calls, %d ENIs attached", n, attached)
	})
	_ = first.Stop() // the process dies: nothing after this point of its work happens
	if err := h.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{}}); err != nil {
		t.Fatal(err)
	}
	left := h.enis()
	t.Logf("%s failing (afterApply=%v, tokens ignored %v): %d ENIs existed when the manager died", action, afterApply, ignoreTokens, len(left))
	h.Emulator.ResetCounts()
	o := h.options()
	clock := clocktesting.NewFakePassiveClock(time.Now())
	o.Clock = clock
	h.start(o)
	h.ready("crash", nodes)
	h.exactlyOnePerKey(names, []string{h.Subnets["multus-a"], h.Subnets["storage-a"]})
	if len(left) >= 2*nodes {
		if c := h.calls("CreateNetworkInterface"); c != 0 {
			t.Errorf("%d creates after the restart, want 0: every ENI the first process made is found by its nonce", c)
		}
		if d := h.calls("DeleteNetworkInterface"); d != len(left)-2*nodes {
			t.Errorf("%d deletes after the restart, want the %d extra ENIs", d, len(left)-2*nodes)
		}
	}
	// What the ENINodes record: one record bound to each ENI kept; those
	// of the creates the first process never sent go once no ENI showed
	// their nonces for the window.
	clock.SetTime(clock.Now().Add(5*time.Minute + time.Second))
	kept := map[string]bool{}
	for _, e := range h.enis() {
		kept[e.ID] = true
	}
	h.eventually("a record bound to each ENI, no other", waitFor, func() (bool, string) {
		var got []string
		for _, en := range h.eniNodes() {
			for _, c := range en.Spec.Creates {
				got = append(got, c.ENIID)
			}
		}
		bound := 0
		for _, id := range got {
			if kept[id] {
				bound++
			}
		}
		return len(got) == len(kept) && bound == len(kept), fmt.Sprintf("records bound to %v, ENIs %v", got, kept)
	})
}

// Item 5: killed after CreateNetworkInterface took effect but before its
// answer arrived, so before any attach.
func TestCrashAfterCreateBeforeAttach(t *testing.T) {
	crashScenario(t, "CreateNetworkInterface", true, false)
}

// Item 5: killed after AttachNetworkInterface took effect, before the
// status write (the answer was lost).
func TestCrashAfterAttachBeforeStatus(t *testing.T) {
	crashScenario(t, "AttachNetworkInterface", true, false)
}

// Item 5: killed with attaches failing outright: ENIs exist, unattached.
func TestCrashWithUnattachedENIs(t *testing.T) {
	crashScenario(t, "AttachNetworkInterface", false, false)
}

// Item 5: killed abruptly, at whatever point the work had reached, as soon
// as the emulator's call log shows the first create; repeated at several
// points of the work.
func TestCrashAtRandomPoints(t *testing.T) {
	const nodes = 6
	h, names := nodesHarness(t, nodes, "kill")
	// Slow EC2 a little so the kills land inside the work.
	if err := h.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{
		"*": {Latency: emulator.Duration{Duration: 5 * time.Millisecond}, Jitter: emulator.Duration{Duration: 10 * time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	spec := h.spec(map[string]string{"ng": "kill"})
	spec.SubnetNames = []string{"multus-a", "storage-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("kill", spec)
	for round, after := range []int{1, 3, 6, 9} {
		m := h.start(h.options())
		h.eventually("creates under way", waitFor, func() (bool, string) {
			n := h.calls("CreateNetworkInterface") + h.calls("AttachNetworkInterface")
			return n >= after || len(h.enis()) == 2*nodes, fmt.Sprintf("%d", n)
		})
		_ = m.Stop()
		t.Logf("round %d: killed after %d create/attach calls; %d ENIs exist", round, after, len(h.enis()))
		h.Emulator.ResetCounts()
	}
	h.start(h.options())
	h.ready("kill", nodes)
	h.exactlyOnePerKey(names, []string{h.Subnets["multus-a"], h.Subnets["storage-a"]})
}
