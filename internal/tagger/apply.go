package tagger

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// apply hands the plan's writes, if any, to the writer, which also
// concludes them; a plan with nothing to write goes on to conclude.
func (r *Reconciler) apply(ctx context.Context, w *podWork) *phases.Stop {
	if w.plan.Empty() {
		return nil
	}
	if wait := r.rateLimited(w.key); wait > 0 {
		return phases.After(wait)
	}
	r.writer.submit(w)
	return phases.Done(nil)
}

// rateLimited applies --pod-rate-limit-qps to AWS writes and returns how
// long to wait, 0 when the write may go ahead.
func (r *Reconciler) rateLimited(key string) time.Duration {
	if r.opts.PodRateLimitQPS <= 0 {
		return 0
	}
	return r.pods.reserve(key, r.opts.PodRateLimitQPS, r.opts.PodRateLimitBurst, r.opts.Clock.Now())
}

// writeTags is the first stage of the writer's job for one pod: the
// plan's AWS writes. A failed write is returned for the pod's next
// reconcile to report.
func (r *Reconciler) writeTags(ctx context.Context, w *podWork) error {
	if err := r.write(ctx, w.eni, w.plan); err != nil {
		return err
	}
	w.wrote = true
	return nil
}

func (r *Reconciler) write(ctx context.Context, eni ec2.ENI, plan tagplan.Plan) error {
	var errs []error
	if len(plan.Create) > 0 {
		r.metrics.writes.WithLabelValues("create").Inc()
		if err := r.ec2.CreateTags(ctx, eni.ID, plan.Create); err != nil {
			errs = append(errs, err)
		}
	}
	if len(plan.Delete) > 0 && len(errs) == 0 {
		r.metrics.writes.WithLabelValues("delete").Inc()
		if err := r.ec2.DeleteTags(ctx, eni.ID, plan.Delete); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// concludeWrite is the writer's second stage: a successful write is
// concluded at once, so a change costs one reconcile. One that fails (the
// pod changed meanwhile) is left to the next reconcile, which finds the
// tags on the ENI and concludes.
func (r *Reconciler) concludeWrite(ctx context.Context, w *podWork) {
	if r.leaving(ctx, &w.pod) {
		// Time passed since the plan: the pod may have gone meanwhile.
		r.keepInLedger(w)
		return
	}
	if err := r.conclude(ctx, w); err != nil {
		log.FromContext(ctx).V(1).Info("concluding a write failed; the next reconcile concludes it", "pod", w.key, "error", bounded.Error(err))
		r.requeue(w.key)
		return
	}
	if len(w.own) > 0 {
		r.pods.noteLastApplied(w.key, w.pod.UID, w.plan.Hash, r.opts.Clock.Now())
	}
}

// leaving tells whether the pod, as the cache shows it now, is gone,
// replaced, or being deleted with nothing of the tagger's holding it: its
// write is then concluded in the ledger only (so the tags go when the pod
// does). A write is concluded seconds after its plan under churn, and
// patching pods about to go spends the --kube-api-qps budget the living
// pods need. A pod held by the tagger's finalizer is concluded in full:
// its last-applied annotations are what a restart recovers a lost ledger
// write from.
func (r *Reconciler) leaving(ctx context.Context, planned *corev1.Pod) bool {
	var now corev1.Pod
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(planned), &now); err != nil {
		return apierrors.IsNotFound(err)
	}
	return now.UID != planned.UID || (now.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&now, Finalizer))
}
