package nodeeni

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// reporter tells users about a NodeENI: events on it, and the ENIs it
// leaves alone (each reported once per reason).
type reporter struct {
	recorder   recorder.EventRecorder
	distrusted *distrustLog
}

// event records an event on the NodeENI with a note made already.
func (rp *reporter) event(ne *v1alpha1.NodeENI, eventType, reason, act, note string) {
	if rp.recorder != nil {
		rp.recorder.Eventf(ne, nil, eventType, reason, act, "%s", note)
	}
}

// leftAlone reports the ENIs whose reason (v) changed since the
// last pass under key: a log line each and one Warning event on the
// NodeENI (events of the same reason fold into one series, so one per
// ENI would hide all but the first).
func (rp *reporter) leftAlone(ctx context.Context, ne *v1alpha1.NodeENI, key string, v eniplan.Verdicts, how eniplan.LeftAlone) {
	reasons, details := v.Reasons, v.Details
	changed := rp.distrusted.update(key, reasons)
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	items := make([]string, len(changed))
	for i, id := range changed {
		log.FromContext(ctx).Info(how.Log, "eni", id, "reason", reasons[id], "detail", details[id])
		items[i] = fmt.Sprintf("%s (%s: %s)", id, reasons[id], details[id])
	}
	rp.event(ne, corev1.EventTypeWarning, how.Reason, how.Action, fmt.Sprintf(how.Note, len(changed), bounded.List(items, "; ", bounded.Items)))
}

// notAdopted reports the ENIs not adopted, each once per reason: a
// Warning event on the NodeENI and a log line.
func (rp *reporter) notAdopted(ctx context.Context, ne *v1alpha1.NodeENI, v eniplan.Verdicts) {
	rp.leftAlone(ctx, ne, "adopt/"+string(ne.UID), v, eniplan.LeftAlone{
		Log:    "ENI of aws-multi-eni-controller (by its tags or this NodeENI's status) not adopted; it is left alone",
		Reason: "NotAdopted", Action: "Adopt",
		Note: "%d ENIs of aws-multi-eni-controller (by its tags or this NodeENI's status) are not adopted and are left alone (never detached, deleted or changed): %s"})
}

// selection makes a changed resolution one event and a log line when
// the condition's message changes, not one per pass.
func (rp *reporter) selection(ctx context.Context, ne *v1alpha1.NodeENI, st v1alpha1.NodeENIStatus) {
	now := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSelectionChanged)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if old := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionSelectionChanged); old != nil && old.Message == now.Message {
		return
	}
	log.FromContext(ctx).Info("the subnet and security-group sources resolve otherwise; running ENIs keep theirs", "reason", now.Reason, "detail", now.Message)
	rp.event(ne, corev1.EventTypeWarning, now.Reason, "Resolve", now.Message)
}
