package nodeeni

import (
	"context"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// act carries the plan out, or in dry-run only says what it would do.
// It goes in rounds of opts.RoundNodes nodes and tells progress what
// each round but the last left, for the status.
func (r *reconciler) act(ctx context.Context, ne *v1alpha1.NodeENI, in *eniplan.PlanInput, p eniplan.Plan, progress func(eniplan.PlanInput, eniplan.Acted)) eniplan.Acted {
	unchanged := eniplan.LegacyRecords(ne.Status.Attachments, in.Adopt, in.Prove)
	if r.opts.DryRun {
		return eniplan.Acted{After: p, Legacy: unchanged, Dry: eniplan.DryRunSummary(p.Actions, in.Deleting)} // nothing changed
	}
	if len(p.Actions) == 0 {
		return eniplan.Acted{After: p, Legacy: unchanged} // nothing changed: the plan is the status
	}
	var o eniplan.Acted
	adopting := in.Adopt
	rounds := eniplan.RoundsOf(p.Actions, r.opts.RoundNodes)
	for i, round := range rounds {
		failures, err := r.exec.execute(ctx, ne, round)
		o.Failures = append(o.Failures, failures...)
		if o.ExecErr == nil {
			o.ExecErr = err
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
func (r *reconciler) replan(ctx context.Context, ne *v1alpha1.NodeENI, in *eniplan.PlanInput, adopting []eniplan.Action, o *eniplan.Acted) {
	in.ENIs, in.Prove, in.Distrusted = r.trusted(ctx, ne, in.Legacy, in.Records, ofNodeENI(r.ec2, string(ne.UID)))
	in.Adopt = nil // adopted ENIs are now among the NodeENI's own
	r.applied.overlay(in)
	o.After = eniplan.MakePlan(*in)
	// An ENI whose adoption EC2 refused (or is yet to come) stays as the
	// original recorded it, so its node's agent keeps it configured.
	waiting := eniplan.NotAdopted(adopting, in.ENIs)
	o.After.Attachments = append(o.After.Attachments, eniplan.LegacyRecords(ne.Status.Attachments, waiting)...)
	o.Legacy = eniplan.LegacyRecords(ne.Status.Attachments, waiting, in.Prove)
}
