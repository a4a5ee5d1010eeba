package eniplan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

func TestDryRunSummary(t *testing.T) {
	w := Want{Node: "n1", Instance: "i-1", Subnet: "subnet-a"}
	cases := []struct {
		name     string
		acts     []Action
		deleting bool
		want     string
	}{
		{"nothing to do", nil, false, ""},
		{"a wanted ENI still detaching changes nothing", []Action{{Kind: ActPoll, Node: "n1", ENI: "eni-1"}}, false, ""},
		{"creates and a detach", []Action{
			{Kind: ActCreate, Node: "n1", Want: w, Index: 1},
			{Kind: ActCreate, Node: "n2", Want: Want{Node: "n2", Subnet: "subnet-a"}, Index: 1},
			{Kind: ActDetach, Node: "n3", ENI: "eni-3", Reason: CleanupNodeUnmatched},
		}, false, "dry run: would create 2 ENIs, detach 1 ENI: create an ENI in subnet-a for node n1 at device index 1; " +
			"create an ENI in subnet-a for node n2 at device index 1; detach eni-3 from node n3 (NodeUnmatched)"},
		{"in-place changes and deletes", []Action{
			{Kind: ActSetGroups, Node: "n1", ENI: "eni-1"},
			{Kind: ActPoll, Node: "n1", ENI: "eni-2", Reason: CleanupSubnetRemoved},
			{Kind: ActDelete, Node: "n1", ENI: "eni-4", Reason: CleanupDuplicate},
			{Kind: ActAttach, Node: "n1", ENI: "eni-5", Index: 2},
		}, false, "dry run: would attach 1 ENI, delete 2 ENIs, update 1 ENI: set-security-groups on eni-1 of node n1; " +
			"delete eni-2 of node n1 once detached (SubnetRemoved); delete eni-4 of node n1 (Duplicate); attach eni-5 to node n1 at device index 2"},
		{"deleting", []Action{{Kind: ActDetach, Node: "n1", ENI: "eni-1", Reason: CleanupNodeENIDeleted}}, true,
			"dry run: the NodeENI keeps its finalizer and its ENIs (run without --dry-run to delete them); would detach 1 ENI: detach eni-1 from node n1 (NodeENIDeleted)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DryRunSummary(c.acts, c.deleting); got != c.want {
				t.Fatalf("got\n  %s\nwant\n  %s", got, c.want)
			}
		})
	}

	// many actions: a few are listed, the rest counted; the message stays bounded.
	var many []Action
	for i := range 500 {
		many = append(many, Action{Kind: ActCreate, Node: fmt.Sprintf("node-%03d-%s", i, strings.Repeat("x", 200)), Want: w, Index: 1})
	}
	got := DryRunSummary(many, false)
	if !strings.HasPrefix(got, "dry run: would create 500 ENIs: ") || len(got) > bounded.Message {
		t.Fatalf("summary of 500 creates: %d bytes: %.200s", len(got), got)
	}
	few := DryRunSummary(many[:bounded.Items+3], false)
	if !strings.HasSuffix(few, "and 3 more") {
		t.Fatalf("summary of %d creates: %s", bounded.Items+3, few)
	}
}
