package tagger

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// wanted works out the tags the pod asks for, with the tag policies that
// select it, and what it was given.
func (r *Reconciler) wanted(ctx context.Context, w *podWork) *phases.Stop {
	raw, annotated := w.pod.Annotations[r.opts.AnnotationKey]
	w.applied, w.appliedHash = lastApplied(&w.pod, w.rec, w.hasRec)
	var policies []*tagpolicy.Policy
	var nsLabels map[string]string
	if !w.pod.Spec.HostNetwork {
		// A host-network pod is never tagged: no policy makes it the
		// tagger's business.
		if r.opts.Policies.active() {
			nsLabels, _ = r.opts.Policies.namespaceLabels(ctx, w.pod.Namespace)
		}
		policies, w.selected = r.opts.Policies.forPod(nsLabels, w.pod.Labels, annotated)
	}
	w.policied = w.selected || r.tally.has(w.key)
	if !annotated && !w.selected && len(w.applied) == 0 {
		// Nothing asked, nothing applied: a condition left from before
		// (InvalidTags of an annotation since removed, DryRun of a run
		// that has ended, Synced on an ENI whose record is gone) no longer
		// describes anything, so it goes. TagsRemoved stays: it is true.
		r.pods.clearWarning(w.key)
		r.pods.stopWaiting(w.key)
		r.tally.drop(w.key)
		if err := r.onPod.clearCondition(ctx, &w.pod); err != nil {
			return phases.Done(err)
		}
		return phases.Done(r.onPod.dropFinalizer(ctx, &w.pod))
	}
	if w.pod.Spec.HostNetwork {
		// Its address is the node's, and so is the ENI that holds it:
		// told before anything is parsed or looked up, so the pod costs
		// no EC2 call.
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonHostNetwork,
			message: fmt.Sprintf("the pod uses the host network: it shares its node's network and address, and the node's ENI is never tagged for a pod; annotation %s is ignored", r.opts.AnnotationKey),
			event:   true, warning: true})
	}
	asked := map[string]string{}
	var err error
	if annotated {
		asked, err = tagplan.ParseAnnotation(raw)
		if err == nil {
			asked, err = r.policy.Desired(w.pod.Namespace, asked)
		}
	}
	if err != nil {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonInvalidTags,
			message: invalidMessage(r.opts.AnnotationKey, err), warning: true, event: true})
	}
	w.asked = asked
	if len(policies) == 0 {
		return nil
	}
	return r.applyPolicies(ctx, w, policies, nsLabels)
}

// applyPolicies evaluates the tag policies for the pod: its asked tags
// become the policies' merge with its annotation, less the keys they
// leave to other tools.
func (r *Reconciler) applyPolicies(ctx context.Context, w *podWork, policies []*tagpolicy.Policy, nsLabels map[string]string) *phases.Stop {
	in, err := r.policyReads.inputs(ctx, &w.pod, nsLabels, policies)
	if err != nil {
		return phases.Done(err)
	}
	res := tagpolicy.Evaluate(policies, in, w.asked)
	w.matched = res.Matched
	if res.Refused == nil {
		res.Refused = tagpolicy.TooMany(res, operatorTags)
	}
	if res.Refused != nil {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonPolicyRefused,
			message: fmt.Sprintf("not tagging: %v; the ENI's tags are left as they are", res.Refused), warning: true, event: true})
	}
	w.asked, w.origins, w.external = res.Tags, res.Origins, res.ExternallyManaged
	w.overridden = res.AnnotationConflicts
	w.policyConflicts = res.PolicyConflicts
	w.externalConflicts = res.ExternalConflicts
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
