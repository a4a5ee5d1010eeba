package tagger_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// A pod deleted while the write of its annotation's edit is in flight
// (EC2 answering in 1 s): its tags go after the write, all of them, not
// with the record from before the edit; the write is not concluded onto
// the pod already gone.
func TestPodGoneWhileItsWriteIsInFlight(t *testing.T) {
	h, eni := syncedWebPod(t, "Team=Dev,Env=prod")
	slow := emulator.Duration{Duration: time.Second}
	if err := h.emu.Configure(emulator.Config{Latency: &slow}); err != nil {
		t.Fatal(err)
	}
	h.emu.ResetCounts()
	h.annotate("web", "Team=Ops")
	h.eventually("the edit's CreateTags sent", func() bool { return len(h.emu.Calls()) > 0 }, nil)
	before := h.serverWrites()
	h.deletePod("web")
	want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	var got map[string]string
	h.eventually("every tag of the pod removed", func() bool { got = h.eniTags(eni.ID); return maps.Equal(got, want) },
		func() string { return fmt.Sprint("ENI tags ", got) })
	h.eventually("ledger entry dropped", func() bool { return h.ledgerEntries() == 0 }, nil)
	// The write's record went to the ledger only: no patch of the pod
	// already gone (under churn such 404s spent the budget of the living
	// pods' records).
	writes := h.serverWrites().since(before)
	if n := writes["pods PATCH"] + writes.resource("pods/status"); n != 0 {
		t.Errorf("%v writes to the deleted pod or its status, want 0 (all writes: %v)", n, writes)
	}
}
