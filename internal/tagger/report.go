package tagger

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// report sets the pod condition (only when it changes) and emits an event.
// The message is cut to bounded.Message whatever built it, so the
// condition, the event and the log line stay small.
func (r *Reconciler) report(ctx context.Context, pod *corev1.Pod, o outcome) error {
	o.message = bounded.Truncate(o.message, bounded.Message)
	r.metrics.outcomes.WithLabelValues(o.reason).Inc()
	key := client.ObjectKeyFromObject(pod).String()
	if o.reason != ReasonConflict {
		r.pods.stopWaiting(key) // no longer waiting on another pod's tags
	}
	cond := corev1.PodCondition{Type: ConditionType, Status: o.status, Reason: o.reason, Message: o.message,
		ObservedGeneration: pod.Generation, LastTransitionTime: metav1.Now()}
	current := hasCondition(pod, cond)
	switch {
	case o.warning:
		// A repeated refusal is one event and one log line; one the pod's
		// condition already states (a restart) is none.
		if r.pods.firstWarning(key, string(pod.UID), o.reason, o.message) && !current {
			log.FromContext(ctx).Info(o.message, "reason", o.reason)
			r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, o.reason, "Tag", "%s", o.message)
		}
	default:
		r.pods.clearWarning(key)
		if o.event {
			r.recorder.Eventf(pod, nil, corev1.EventTypeNormal, o.reason, "Tag", "%s", o.message)
		}
	}
	if current {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	// Server-side apply of this one condition: conditions are a map keyed
	// by type, so the kubelet's and others' conditions are never touched,
	// whatever the (trimmed) cached pod holds.
	apply := corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
		corev1ac.PodCondition().WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).WithMessage(cond.Message).
			WithObservedGeneration(cond.ObservedGeneration).WithLastTransitionTime(cond.LastTransitionTime)))
	err := r.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// hasCondition tells whether the pod's condition already says what cond
// says (its transition time aside).
func hasCondition(pod *corev1.Pod, cond corev1.PodCondition) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message && c.ObservedGeneration == cond.ObservedGeneration {
			return true
		}
	}
	return false
}

// clearCondition removes the pod's eni-tagger.io/tagged condition unless
// it is TagsRemoved (which stays true once the tags are gone). The
// condition is the operator's own server-side apply field: applying a
// status without it removes it, leaving every other condition as it is.
// A condition the operator does not own (written by an older version
// with another field manager) is removed by a JSON patch that first
// tests it is still the one read.
func (r *Reconciler) clearCondition(ctx context.Context, pod *corev1.Pod) error {
	idx := -1
	for i, c := range pod.Status.Conditions {
		if c.Type == ConditionType {
			idx = i
		}
	}
	if idx < 0 || pod.Status.Conditions[idx].Reason == ReasonRemoved {
		return nil
	}
	apply := corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus())
	if err := r.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.apiReader == nil {
		return nil
	}
	// The cache holds trimmed pods: the index of the condition is read
	// from the server.
	var fresh corev1.Pod
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), &fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	for i, c := range fresh.Status.Conditions {
		if c.Type != ConditionType || c.Reason == ReasonRemoved {
			continue
		}
		ops, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/status/conditions/%d/type", i), "value": ConditionType},
			{"op": "remove", "path": fmt.Sprintf("/status/conditions/%d", i)},
		})
		return client.IgnoreNotFound(r.client.Status().Patch(ctx, &fresh, client.RawPatch(types.JSONPatchType, ops)))
	}
	return nil
}

func (r *Reconciler) awsFailure(ctx context.Context, pod *corev1.Pod, what string, err error) error {
	reason, hint := ReasonAWSError, "retrying with backoff"
	if ec2.IsUnauthorized(err) {
		hint = "the operator's IAM policy lacks a permission (docs/iam.md); retrying with backoff"
	}
	_ = r.report(ctx, pod, outcome{status: corev1.ConditionFalse, reason: reason,
		message: fmt.Sprintf("%s failed (%s): %s; %s", what, bounded.Truncate(ec2.Code(err), bounded.Quote), errorText(err), hint), event: true, warning: true})
	return err
}
