package nodeeni

import (
	"context"
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// acted is what carrying a plan out left: the plan of the state after it
// (for status), the entries of the deprecated status.attachments still
// needed, the nodes EC2 refused, the first other error, and in dry-run
// what would have been done.
type acted struct {
	after    plan
	legacy   []v1alpha1.ENIAttachment
	failures []blocked
	execErr  error
	dry      string
}

// act carries the plan out, or in dry-run only says what it would do.
// It goes in rounds of opts.RoundNodes nodes and tells progress what
// each round but the last left, for the status.
func (r *reconciler) act(ctx context.Context, ne *v1alpha1.NodeENI, in *planInput, p plan, progress func(planInput, acted)) acted {
	unchanged := legacyRecords(ne.Status.Attachments, in.Adopt, in.Prove)
	if r.opts.DryRun {
		return acted{after: p, legacy: unchanged, dry: dryRunSummary(p.Actions, in.Deleting)} // nothing changed
	}
	if len(p.Actions) == 0 {
		return acted{after: p, legacy: unchanged} // nothing changed: the plan is the status
	}
	var o acted
	adopting := in.Adopt
	rounds := roundsOf(p.Actions, r.opts.RoundNodes)
	for i, round := range rounds {
		failures, err := r.execute(ctx, ne, round)
		o.failures = append(o.failures, failures...)
		if o.execErr == nil {
			o.execErr = err
		}
		r.replan(ctx, ne, in, adopting, &o)
		if i < len(rounds)-1 {
			progress(*in, o)
		}
	}
	return o
}

// replan sets what the status describes after actions: the plan made
// again from the EC2 state, which now holds their results (no EC2 call).
func (r *reconciler) replan(ctx context.Context, ne *v1alpha1.NodeENI, in *planInput, adopting []action, o *acted) {
	in.ENIs, in.Prove, in.Distrusted = r.trusted(ctx, ne, in.Legacy, in.Records, ofNodeENI(r.ec2, string(ne.UID)))
	in.Adopt = nil // adopted ENIs are now among the NodeENI's own
	r.applied.overlay(in)
	o.after = makePlan(*in)
	// An ENI whose adoption EC2 refused (or is yet to come) stays as the
	// original recorded it, so its node's agent keeps it configured.
	waiting := notAdopted(adopting, in.ENIs)
	o.after.Attachments = append(o.after.Attachments, legacyRecords(ne.Status.Attachments, waiting)...)
	o.legacy = legacyRecords(ne.Status.Attachments, waiting, in.Prove)
}

// roundsOf splits actions into rounds of at most n nodes each, nodes in
// plan order; a node's actions stay together, in their order (execute
// skips a node's later steps when one fails).
func roundsOf(acts []action, n int) [][]action {
	order, byNode := perNode(acts)
	var rounds [][]action
	for chunk := range slices.Chunk(order, max(n, 1)) {
		var round []action
		for _, node := range chunk {
			round = append(round, byNode[node]...)
		}
		rounds = append(rounds, round)
	}
	return rounds
}

// perNode groups actions by node: the nodes in the order of their first
// action, and each node's actions in their order.
func perNode(acts []action) ([]string, map[string][]action) {
	byNode := map[string][]action{}
	var order []string
	for _, a := range acts {
		if _, ok := byNode[a.Node]; !ok {
			order = append(order, a.Node)
		}
		byNode[a.Node] = append(byNode[a.Node], a)
	}
	return order, byNode
}
