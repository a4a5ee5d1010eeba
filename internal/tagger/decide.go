package tagger

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// decide plans the tag diff: for the pod alone on a dedicated ENI, or
// merged with the other pods of a shared one.
func (r *Reconciler) decide(ctx context.Context, w *podWork) *phases.Stop {
	w.desired, w.own = w.asked, w.asked
	if nodeAddress(w.eni, w.ip) {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonNodeAddress,
			message: fmt.Sprintf("pod IP %s is the primary address of ENI %s, its instance's primary interface (device index 0): the node's own address and ENI, never tagged for a pod", w.ip, w.eni.ID),
			event:   true, warning: true})
	}
	w.shared = !dedicated(w.eni, w.ip)
	if w.shared {
		if s := r.decideShared(ctx, w); s != nil {
			return s
		}
	}
	w.plan = tagplan.PlanTags(tagplan.PlanInput{Desired: w.desired, Applied: w.applied, AppliedHash: w.appliedHash, ENITags: w.eni.Tags,
		IgnoreOwnership: r.opts.AllowSharedENITagging, Untouched: w.external})
	switch {
	case w.plan.Conflict != "":
		// Another pod's tags may hold the ENI: its release brings this
		// pod back (pods.release).
		r.pods.waitOn(w.key, w.eni.ID)
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonConflict,
			message: fmt.Sprintf("not tagging ENI %s: %s. Use --allow-shared-eni-tagging if several owners are intended", w.eni.ID, w.plan.Conflict), event: true, warning: true})
	case w.plan.TooMany != nil:
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonInvalidTags,
			message: fmt.Sprintf("not tagging ENI %s: %v", w.eni.ID, w.plan.TooMany), event: true, warning: true})
	}
	if r.opts.DryRun {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonDryRun,
			message: fmt.Sprintf("dry run: would set %s and remove %s on ENI %s", describe(w.plan.Create), describe(w.plan.Delete), w.eni.ID), event: !w.plan.Empty()})
	}
	if !w.shared {
		w.own = w.plan.Applied
	}
	return nil
}

// decideShared merges the tags of the pods sharing the ENI (only with
// --allow-shared-eni-tagging).
func (r *Reconciler) decideShared(ctx context.Context, w *podWork) *phases.Stop {
	if !r.opts.AllowSharedENITagging {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonSharedENI,
			message: fmt.Sprintf("pod IP %s is a secondary address or prefix of ENI %s, which other pods share; tags would apply to all of them. Use branch ENIs (security groups for pods) or run with --allow-shared-eni-tagging", w.ip, w.eni.ID),
			event:   true, warning: true})
	}
	var err error
	w.desired, w.conflicts, err = r.shared.desired(ctx, &w.pod, w.eni, w.asked)
	if err != nil {
		return phases.Done(err)
	}
	// A disputed key is neither written nor removed; the pod keeps owning
	// it if its value is the one on the ENI, so it is cleaned up when the
	// pod goes.
	w.own = maps.Clone(w.asked)
	w.applied = maps.Clone(w.applied)
	for k := range w.conflicts {
		if w.applied[k] != w.asked[k] || w.eni.Tags[k] != w.asked[k] {
			delete(w.own, k)
		}
		delete(w.applied, k)
	}
	return nil
}
