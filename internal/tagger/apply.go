package tagger

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// apply makes the plan's AWS writes, if any, and waits for their batch
// without the reconcile's slot: from here on the reconcile waits, on
// EC2's batches and then on the Kubernetes API's budget (--kube-api-qps),
// so the next pods' writes go ahead at EC2's pace.
func (r *Reconciler) apply(ctx context.Context, w *podWork) *phases.Stop {
	if w.plan.Empty() {
		return nil
	}
	if wait := r.rateLimited(w.key); wait > 0 {
		return phases.After(wait)
	}
	w.slot.give()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err := r.write(wctx, w.eni, w.plan)
	cancel()
	if err != nil && ctx.Err() != nil {
		return phases.Done(ctx.Err()) // the manager is stopping
	}
	if err != nil {
		return phases.Done(r.awsFailure(ctx, &w.pod, "writing tags to ENI "+w.eni.ID, err))
	}
	w.wrote = true
	if r.leaving(ctx, &w.pod) {
		// Time passed since the plan: the pod may have gone meanwhile.
		r.keepInLedger(w)
		return phases.Done(nil)
	}
	return nil
}

// rateLimited applies --pod-rate-limit-qps to AWS writes and returns how
// long to wait, 0 when the write may go ahead.
func (r *Reconciler) rateLimited(key string) time.Duration {
	if r.opts.PodRateLimitQPS <= 0 {
		return 0
	}
	return r.pods.reserve(key, r.opts.PodRateLimitQPS, r.opts.PodRateLimitBurst, r.opts.Clock.Now())
}

// writeTimeout bounds one pod's AWS writes, their batch's wait included.
const writeTimeout = 2 * time.Minute

func (r *Reconciler) write(ctx context.Context, eni awstypes.ENI, plan tagplan.Plan) error {
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

// leaving tells whether the pod, as the cache shows it now, is gone,
// replaced, or being deleted with nothing of the tagger's holding it: its
// write is then concluded in the ledger only (so the tags go when the pod
// does). A write ends seconds after its plan under churn, and
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
