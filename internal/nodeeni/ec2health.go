package nodeeni

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// ReasonEC2Unreachable is the reason of the Ready condition (status
// Unknown) while the operator's EC2 calls have failed for
// --ec2-unready-after with none succeeding: what the status last said
// may no longer hold, and nothing can be changed.
const ReasonEC2Unreachable = "EC2Unreachable"

// watchEC2Health re-checks every NodeENI when EC2 is found down and when
// it answers again. While it is down the inventory does not refresh, so
// nothing else would.
func watchEC2Health(h *ec2.Health, resync chan<- event.GenericEvent, lg logr.Logger) {
	h.OnChange(func(down bool) {
		if down {
			lg.Info("NodeENI Ready conditions are Unknown (EC2Unreachable) until EC2 answers again")
		}
		recheckAll(resync)
	})
}

// ec2Unreachable reports whether EC2 is down (ec2.Health). If so, the
// NodeENI's Ready condition becomes Unknown, reason EC2Unreachable,
// naming the last error, and the reconcile stops there: a plan would
// rest on a stale inventory and its calls would fail too. The other
// conditions keep what they last said. When EC2 answers again every
// NodeENI is reconciled as usual, which sets Ready anew.
func (r *reconciler) ec2Unreachable(ctx context.Context, ne *v1alpha1.NodeENI) (bool, error) {
	s := r.ec2.Health().Status()
	if !s.Down {
		return false, nil
	}
	msg := ec2UnreachableMessage(s)
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: ReasonEC2Unreachable,
		Message: msg, ObservedGeneration: ne.Generation}
	old := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionReady)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return true, nil
	}
	if old == nil || old.Reason != ReasonEC2Unreachable {
		log.FromContext(ctx).Info("EC2 unreachable: Ready is Unknown until an EC2 call succeeds", "detail", msg)
		r.report.event(ne, corev1.EventTypeWarning, ReasonEC2Unreachable, "Reconcile", msg)
	}
	patched := ne.DeepCopy()
	meta.SetStatusCondition(&patched.Status.Conditions, cond)
	return true, r.client.Status().Patch(ctx, patched, client.MergeFromWithOptions(ne, client.MergeFromWithOptimisticLock{}))
}

// ec2UnreachableMessage names when EC2 calls started failing and the
// last error; it does not change while the failure stays the same, so
// reconciles during an outage write nothing.
func ec2UnreachableMessage(s ec2.HealthStatus) string {
	return bounded.Truncate(fmt.Sprintf("EC2 unreachable: no EC2 call has succeeded since %s (threshold %s, --ec2-unready-after); last error: %s",
		s.FailingSince.UTC().Format(time.RFC3339), s.UnreadyAfter, s.Last), bounded.Message)
}
