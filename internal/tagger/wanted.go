package tagger

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eni-operator/eni-operator/internal/phases"
	corev1 "k8s.io/api/core/v1"
)

// wanted works out the tags the pod asks for and what it was given.
func (r *Reconciler) wanted(ctx context.Context, w *podWork) *phases.Stop {
	raw, annotated := w.pod.Annotations[r.opts.AnnotationKey]
	w.applied, w.appliedHash = lastApplied(&w.pod, w.rec, w.hasRec)
	if !annotated && len(w.applied) == 0 {
		// Nothing asked, nothing applied: a condition left from before
		// (InvalidTags of an annotation since removed, DryRun of a run
		// that has ended, Synced on an ENI whose record is gone) no longer
		// describes anything, so it goes. TagsRemoved stays: it is true.
		r.pods.clearWarning(w.key)
		r.pods.stopWaiting(w.key)
		if err := r.clearCondition(ctx, &w.pod); err != nil {
			return phases.Done(err)
		}
		return phases.Done(r.dropFinalizer(ctx, &w.pod))
	}
	if w.pod.Spec.HostNetwork {
		// Its address is the node's, and so is the ENI that holds it:
		// told before anything is parsed or looked up, so the pod costs
		// no EC2 call.
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonHostNetwork,
			message: fmt.Sprintf("the pod uses the host network: it shares its node's network and address, and the node's ENI is never tagged for a pod; annotation %s is ignored", r.opts.AnnotationKey),
			event:   true, warning: true})
	}
	asked, err := ParseAnnotation(raw)
	if err == nil {
		asked, err = r.policy.Desired(w.pod.Namespace, asked)
	}
	if err != nil {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonInvalidTags,
			message: invalidMessage(r.opts.AnnotationKey, err), warning: true, event: true})
	}
	w.asked = asked
	return nil
}

// lastApplied returns what was applied for the pod: from the ledger, or
// from the pod's own annotations (pods tagged by k8s-eni-tagger).
func lastApplied(pod *corev1.Pod, rec Record, hasRec bool) (map[string]string, string) {
	if hasRec {
		return rec.Tags, rec.Hash
	}
	var applied map[string]string
	if raw := pod.Annotations[LastAppliedTagsAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &applied) // unreadable: treat as nothing applied
	}
	return applied, pod.Annotations[LastAppliedHashAnnotation]
}
