package tagger

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// podWriter makes the tagger's writes on a pod: its condition and the
// event that goes with it, its last-applied annotations and finalizer.
type podWriter struct {
	client client.Client
	// apiReader reads a pod past the trimmed cache; nil in unit tests.
	apiReader client.Reader
	recorder  recorder.EventRecorder
	outcomes  *prometheus.CounterVec
	// pods keeps each pod's last Warning, so a repeated refusal is one
	// event.
	pods *pods
	// finalizer is --pod-finalizer: tagged pods carry Finalizer.
	finalizer bool
	clock     clock.PassiveClock
}

// report sets the pod condition (only when it changes) and emits an event.
// The message is cut to bounded.Message whatever built it, so the
// condition, the event and the log line stay small.
func (p *podWriter) report(ctx context.Context, pod *corev1.Pod, o verdict) error {
	o.message = bounded.Truncate(o.message, bounded.Message)
	p.outcomes.WithLabelValues(o.reason).Inc()
	key := client.ObjectKeyFromObject(pod).String()
	if o.reason != ReasonConflict {
		p.pods.stopWaiting(key) // no longer waiting on another pod's tags
	}
	cond := corev1.PodCondition{Type: ConditionType, Status: o.status, Reason: o.reason, Message: o.message,
		ObservedGeneration: pod.Generation, LastTransitionTime: metav1.NewTime(p.clock.Now())}
	current := hasCondition(pod, cond)
	switch {
	case o.warning:
		// A repeated refusal is one event and one log line; one the pod's
		// condition already states (a restart) is none.
		if p.pods.firstWarning(key, string(pod.UID), o.reason, o.message) && !current {
			log.FromContext(ctx).Info(o.message, "reason", o.reason)
			p.recorder.Eventf(pod, nil, corev1.EventTypeWarning, o.reason, "Tag", "%s", o.message)
		}
	default:
		p.pods.clearWarning(key)
		if o.event {
			p.recorder.Eventf(pod, nil, corev1.EventTypeNormal, o.reason, "Tag", "%s", o.message)
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
	err := p.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership)
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
func (p *podWriter) clearCondition(ctx context.Context, pod *corev1.Pod) error {
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
	if err := p.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return client.IgnoreNotFound(err)
	}
	if p.apiReader == nil {
		return nil
	}
	// The cache holds trimmed pods: the index of the condition is read
	// from the server.
	var fresh corev1.Pod
	if err := p.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), &fresh); err != nil {
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
		return client.IgnoreNotFound(p.client.Status().Patch(ctx, &fresh, client.RawPatch(types.JSONPatchType, ops)))
	}
	return nil
}

func (p *podWriter) awsFailure(ctx context.Context, pod *corev1.Pod, what string, err error) error {
	reason, hint := ReasonAWSError, "retrying with backoff"
	if ec2.IsUnauthorized(err) {
		hint = "the operator's IAM policy lacks a permission (docs/iam.md); retrying with backoff"
	}
	_ = p.report(ctx, pod, verdict{status: corev1.ConditionFalse, reason: reason,
		message: fmt.Sprintf("%s failed (%s): %s; %s", what, bounded.Truncate(ec2.Code(err), bounded.Quote), errorText(err), hint), event: true, warning: true})
	return err
}

// writeLastApplied writes the last-applied annotations (k8s-eni-tagger's
// bookkeeping, kept so users can see and tools can read it) and, in
// finalizer mode, the finalizer — one metadata patch, only when needed.
func (p *podWriter) writeLastApplied(ctx context.Context, pod *corev1.Pod, applied map[string]string, hash string) error {
	orig := pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if len(applied) == 0 {
		delete(pod.Annotations, LastAppliedTagsAnnotation)
		delete(pod.Annotations, LastAppliedHashAnnotation)
		controllerutil.RemoveFinalizer(pod, Finalizer)
	} else {
		raw, _ := json.Marshal(applied)
		pod.Annotations[LastAppliedTagsAnnotation] = string(raw)
		pod.Annotations[LastAppliedHashAnnotation] = hash
		if p.finalizer {
			controllerutil.AddFinalizer(pod, Finalizer)
		}
	}
	if maps.Equal(orig.Annotations, pod.Annotations) && slices.Equal(orig.Finalizers, pod.Finalizers) {
		return nil
	}
	var opts []client.MergeFromOption
	if !slices.Equal(orig.Finalizers, pod.Finalizers) {
		// A merge patch replaces the whole finalizer list: without the
		// lock, a finalizer another controller added meanwhile would be
		// dropped. A conflict is retried with the pod as it is now.
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	return client.IgnoreNotFound(p.client.Patch(ctx, pod, client.MergeFromWithOptions(orig, opts...)))
}

func (p *podWriter) dropFinalizer(ctx context.Context, pod *corev1.Pod) error {
	if !controllerutil.ContainsFinalizer(pod, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(pod, Finalizer)
	return client.IgnoreNotFound(p.client.Patch(ctx, pod, patch))
}
