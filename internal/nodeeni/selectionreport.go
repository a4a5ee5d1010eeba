package nodeeni

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// tellSelection makes a changed resolution one event and a log line when
// the condition's message changes, not one per pass.
func (r *reconciler) tellSelection(ctx context.Context, ne *v1alpha1.NodeENI, st v1alpha1.NodeENIStatus) {
	now := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSelectionChanged)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if old := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionSelectionChanged); old != nil && old.Message == now.Message {
		return
	}
	log.FromContext(ctx).Info("the subnet and security-group sources resolve otherwise; running ENIs keep theirs", "reason", now.Reason, "detail", now.Message)
	r.event(ne, corev1.EventTypeWarning, now.Reason, "Resolve", now.Message)
}
