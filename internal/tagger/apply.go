package tagger

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// writeTimeout bounds one pod's tag writes, their batch's wait included.
const writeTimeout = 2 * time.Minute

// apply makes the plan's writes, if any, and waits for EC2's answer: the
// pod's batch is sent with the other pods' waiting at once. A pod that
// went meanwhile is concluded in the ledger only.
func (r *Reconciler) apply(ctx context.Context, w *podWork) *phases.Stop {
	if w.plan.Empty() {
		return nil
	}
	if wait := r.rateLimited(w.key); wait > 0 {
		return phases.After(wait)
	}
	err := w.slot.waitOnEC2(ctx, func() error {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		return r.write(wctx, w.eni, w.plan)
	})
	if err != nil {
		return phases.Done(r.awsFailure(ctx, &w.pod, "writing tags to ENI "+w.eni.ID, err))
	}
	w.wrote = true
	if r.leaving(ctx, &w.pod) {
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

func (r *Reconciler) write(ctx context.Context, eni ec2.ENI, plan Plan) error {
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
// does). A write may wait seconds for EC2 under churn, and patching pods
// about to go spends the --kube-api-qps budget the living pods need. A pod held by the tagger's finalizer is concluded in full:
// its last-applied annotations are what a restart recovers a lost ledger
// write from.
func (r *Reconciler) leaving(ctx context.Context, planned *corev1.Pod) bool {
	var now corev1.Pod
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(planned), &now); err != nil {
		return apierrors.IsNotFound(err)
	}
	return now.UID != planned.UID || (now.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&now, Finalizer))
}
