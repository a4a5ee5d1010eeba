package nodeeni

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

func TestDryRunSummary(t *testing.T) {
	w := want{Node: "n1", Instance: "i-1", Subnet: "subnet-a"}
	cases := []struct {
		name     string
		acts     []action
		deleting bool
		want     string
	}{
		{"nothing to do", nil, false, ""},
		{"a wanted ENI still detaching changes nothing", []action{{Kind: actPoll, Node: "n1", ENI: "eni-1"}}, false, ""},
		{"creates and a detach", []action{
			{Kind: actCreate, Node: "n1", Want: w, Index: 1},
			{Kind: actCreate, Node: "n2", Want: want{Node: "n2", Subnet: "subnet-a"}, Index: 1},
			{Kind: actDetach, Node: "n3", ENI: "eni-3", Reason: CleanupNodeUnmatched},
		}, false, "dry run: would create 2 ENIs, detach 1 ENI: create an ENI in subnet-a for node n1 at device index 1; " +
			"create an ENI in subnet-a for node n2 at device index 1; detach eni-3 from node n3 (NodeUnmatched)"},
		{"in-place changes and deletes", []action{
			{Kind: actSetGroups, Node: "n1", ENI: "eni-1"},
			{Kind: actPoll, Node: "n1", ENI: "eni-2", Reason: CleanupSubnetRemoved},
			{Kind: actDelete, Node: "n1", ENI: "eni-4", Reason: CleanupDuplicate},
			{Kind: actAttach, Node: "n1", ENI: "eni-5", Index: 2},
		}, false, "dry run: would attach 1 ENI, delete 2 ENIs, update 1 ENI: set-security-groups on eni-1 of node n1; " +
			"delete eni-2 of node n1 once detached (SubnetRemoved); delete eni-4 of node n1 (Duplicate); attach eni-5 to node n1 at device index 2"},
		{"deleting", []action{{Kind: actDetach, Node: "n1", ENI: "eni-1", Reason: CleanupNodeENIDeleted}}, true,
			"dry run: the NodeENI keeps its finalizer and its ENIs (run without --dry-run to delete them); would detach 1 ENI: detach eni-1 from node n1 (NodeENIDeleted)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := dryRunSummary(c.acts, c.deleting); got != c.want {
				t.Fatalf("got\n  %s\nwant\n  %s", got, c.want)
			}
		})
	}

	// Many actions: a few are listed, the rest counted; the message stays bounded.
	var many []action
	for i := range 500 {
		many = append(many, action{Kind: actCreate, Node: fmt.Sprintf("node-%03d-%s", i, strings.Repeat("x", 200)), Want: w, Index: 1})
	}
	got := dryRunSummary(many, false)
	if !strings.HasPrefix(got, "dry run: would create 500 ENIs: ") || len(got) > bounded.Message {
		t.Fatalf("summary of 500 creates: %d bytes: %.200s", len(got), got)
	}
	few := dryRunSummary(many[:bounded.Items+3], false)
	if !strings.HasSuffix(few, "and 3 more") {
		t.Fatalf("summary of %d creates: %s", bounded.Items+3, few)
	}
}
