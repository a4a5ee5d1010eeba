package eniplan

import (
	"fmt"
	"strings"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// ReasonDryRun is the Progressing condition's reason (and the event's)
// when the operator runs with --dry-run and the NodeENI needs changes it
// does not make.
const ReasonDryRun = "DryRun"

// DryRunSummary says what a plan's actions would do, for the status and
// an event in dry-run: counts per kind, then the first few actions and
// how many more. It returns "" when the plan changes nothing.
func DryRunSummary(acts []Action, deleting bool) string {
	order := []string{"adopt", "create", "attach", "detach", "delete", "update"}
	count := map[string]int{}
	var items []string
	for _, a := range acts {
		kind, item := dryRunItem(a)
		if kind == "" {
			continue
		}
		count[kind]++
		// Node names run to 253 bytes: each item is cut so that the
		// listed few and the "and N more" fit the message's bound.
		items = append(items, bounded.Truncate(item, 160))
	}
	if len(items) == 0 {
		return ""
	}
	var counts []string
	for _, k := range order {
		if n := count[k]; n > 0 {
			noun := "ENIs"
			if n == 1 {
				noun = "ENI"
			}
			counts = append(counts, fmt.Sprintf("%s %d %s", k, n, noun))
		}
	}
	msg := "dry run: would " + strings.Join(counts, ", ") + ": " + bounded.List(items, "; ", bounded.Items)
	if deleting {
		msg = "dry run: the NodeENI keeps its finalizer and its ENIs (run without --dry-run to delete them); " + strings.TrimPrefix(msg, "dry run: ")
	}
	return bounded.Truncate(msg, bounded.Message)
}

// dryRunItem names one action's kind (adopt, create, attach, detach,
// delete or update) and describes it; "" for steps that change nothing (polls of a
// wanted ENI).
func dryRunItem(a Action) (string, string) {
	switch a.Kind {
	case ActCreate:
		return "create", fmt.Sprintf("create an ENI in %s for node %s at device index %d", a.Want.Subnet, a.Node, a.Index)
	case ActAttach:
		return "attach", fmt.Sprintf("attach %s to node %s at device index %d", a.ENI, a.Node, a.Index)
	case ActDetach:
		return "detach", fmt.Sprintf("detach %s from node %s (%s)", a.ENI, a.Node, a.Reason)
	case ActPoll:
		if a.Reason == "" {
			return "", ""
		}
		return "delete", fmt.Sprintf("delete %s of node %s once detached (%s)", a.ENI, a.Node, a.Reason)
	case ActDelete:
		return "delete", fmt.Sprintf("delete %s of node %s (%s)", a.ENI, a.Node, a.Reason)
	case ActProve:
		return "prove", fmt.Sprintf("write the ownership proof of %s on node %s", a.ENI, a.Node)
	case ActAdopt:
		return "adopt", fmt.Sprintf("adopt %s of aws-multi-eni-controller on node %s at device index %d", a.ENI, a.Node, a.Index)
	}
	return "update", fmt.Sprintf("%s on %s of node %s", a.Kind, a.ENI, a.Node)
}
