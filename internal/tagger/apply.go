package tagger

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/prometheus/client_golang/prometheus"

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
	// --pod-rate-limit-qps paces each pod's AWS writes.
	if r.opts.PodRateLimitQPS > 0 {
		if wait := r.pods.reserve(w.key, r.opts.PodRateLimitQPS, r.opts.PodRateLimitBurst, r.opts.Clock.Now()); wait > 0 {
			return phases.After(wait)
		}
	}
	w.slot.give()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err := r.tags.write(wctx, w.eni, w.plan)
	cancel()
	if err != nil && ctx.Err() != nil {
		return phases.Done(ctx.Err()) // the manager is stopping
	}
	if err != nil {
		return phases.Done(r.onPod.awsFailure(ctx, &w.pod, "writing tags to ENI "+w.eni.ID, err))
	}
	w.wrote = true
	if leaving(ctx, r.client, &w.pod) {
		// Time passed since the plan: the pod may have gone meanwhile.
		r.keepInLedger(w)
		return phases.Done(nil)
	}
	return nil
}

// writeTimeout bounds one pod's AWS writes, their batch's wait included.
const writeTimeout = 2 * time.Minute

// tagWriter writes a tag plan to an ENI.
type tagWriter struct {
	ec2    EC2
	writes *prometheus.CounterVec // by create or delete
}

func (tw tagWriter) write(ctx context.Context, eni awstypes.ENI, plan tagplan.Plan) error {
	var errs []error
	if len(plan.Create) > 0 {
		tw.writes.WithLabelValues("create").Inc()
		if err := tw.ec2.CreateTags(ctx, eni.ID, plan.Create); err != nil {
			errs = append(errs, err)
		}
	}
	if len(plan.Delete) > 0 && len(errs) == 0 {
		tw.writes.WithLabelValues("delete").Inc()
		if err := tw.ec2.DeleteTags(ctx, eni.ID, plan.Delete); err != nil {
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
func leaving(ctx context.Context, c client.Reader, planned *corev1.Pod) bool {
	var now corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(planned), &now); err != nil {
		return apierrors.IsNotFound(err)
	}
	return now.UID != planned.UID || (now.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&now, Finalizer))
}
