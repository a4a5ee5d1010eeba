package tagger

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// conclude keeps the outcome in the ledger and in the pod's last-applied
// annotations, and reports it.
func (r *Reconciler) conclude(ctx context.Context, w *podWork) error {
	r.keepInLedger(w)
	if err := r.onPod.writeLastApplied(ctx, &w.pod, w.own, w.plan.Hash); err != nil {
		return err
	}
	switch {
	case len(w.conflicts) > 0:
		r.tally.note(w.key, w.tallied(verdictPending, ReasonConflict))
		r.pods.waitOn(w.key, w.eni.ID)
		return r.onPod.report(ctx, &w.pod, verdict{status: corev1.ConditionFalse, reason: ReasonConflict,
			message: fmt.Sprintf("ENI %s is shared and its pods disagree, so these tags are not written: %s; the others are in sync", w.eni.ID, conflictsText(w.conflicts)), event: true, warning: true})
	case len(w.desired) == 0:
		r.tally.note(w.key, w.tallied(verdictPending, ""))
		return r.onPod.report(ctx, &w.pod, verdict{status: corev1.ConditionFalse, reason: ReasonRemoved,
			message: fmt.Sprintf("no tags requested; the operator's tags were removed from ENI %s", w.eni.ID), event: w.wrote})
	}
	// The hash quoted is the token on the ENI (and in the pod's
	// last-applied-hash): after a key removal it is the earlier set's,
	// since removing a key does not rewrite the token.
	o := verdict{status: corev1.ConditionTrue, reason: ReasonSynced,
		message: fmt.Sprintf("%d tags in sync on ENI %s (hash %s)", len(w.own), w.eni.ID, w.plan.Hash) + originsText(w.origins),
		event:   changedEvent(w)}
	disputes := disputesText(w)
	if disputes != "" {
		// Still Synced: the policies decided. A Warning tells the pod's
		// author once.
		o.message += "; " + disputes
		o.warning, o.event = true, true
	}
	r.tally.note(w.key, w.tallied(verdictTagged, disputes))
	return r.onPod.report(ctx, &w.pod, o)
}

// keepInLedger keeps the outcome in the ledger (in memory; written in
// batches).
func (r *Reconciler) keepInLedger(w *podWork) {
	if len(w.own) == 0 {
		r.ledger.Delete(w.key)
		r.revisits.release(w.eni.ID)
		return
	}
	r.ledger.Put(Record{Pod: w.key, UID: string(w.pod.UID), ENI: w.eni.ID, Tags: w.own, Hash: w.plan.Hash})
}

// changedEvent tells whether a Synced outcome gets a Normal event: only
// when a write changed tags the pod already had — someone edited the
// annotation of a running pod and wants to see it land. A pod's first
// tagging gets none: the condition says it, and a burst of 10,000 new
// pods would otherwise be 10,000 events (writes to the API server that
// crowd out the Warnings people look for). Nor does a change the pod's
// tag policies made alone: a policy edit would be an event on each of
// the thousands of pods it selects, and its status says it.
func changedEvent(w *podWork) bool {
	if !w.wrote || len(w.applied) == 0 {
		return false
	}
	if !w.policied {
		return true
	}
	for k := range w.asked {
		if o, fromPolicies := w.origins[k]; (!fromPolicies || o.Policy == "") && w.applied[k] != w.own[k] {
			return true // a key the annotation gives changed
		}
	}
	return false
}
