package nodeeni

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Reasons of the InterfacesConfigured condition.
const (
	ReasonConfigured      = "Configured"
	ReasonInterfaceFailed = "InterfaceFailed"
	ReasonPending         = "Pending"
	ReasonNoAttachments   = "NoAttachments"
)

// interfacesCondition aggregates the node agents' reports over the
// attached ENIs into the InterfacesConfigured condition. An attached ENI
// without a report is only named as a probable missing agent once grace
// has passed since its attachment entry last changed: before that the
// agent is most likely still at work. recheck is how long until such an
// ENI's grace is over (0: none pending on time), so the caller can look
// again then and the message changes without any event.
//
// The message depends only on the reports and on which side of the grace
// period each ENI is, never on the time itself, so recomputing it over
// the same state gives the same condition and writes nothing.
func interfacesCondition(attachments []v1alpha1.ENIAttachment, interfaces []v1alpha1.InterfaceStatus, generation int64, now time.Time, grace time.Duration) (metav1.Condition, time.Duration) {
	type key struct{ node, eni string }
	reports := make(map[key]v1alpha1.InterfaceStatus, len(interfaces))
	for _, s := range interfaces {
		reports[key{s.NodeID, s.ENIID}] = s
	}
	c := metav1.Condition{Type: v1alpha1.ConditionInterfacesConfigured, ObservedGeneration: generation}
	var failed, pending []string
	var recheck time.Duration
	attached := 0
	nodes := map[string]bool{}
	for _, a := range attachments {
		if a.Status != v1alpha1.AttachmentAttached {
			continue // the agent only configures attached ENIs
		}
		attached++
		nodes[a.NodeID] = true
		s, ok := reports[key{a.NodeID, a.ENIID}]
		switch {
		case ok && s.State == v1alpha1.InterfaceConfigured:
		case ok && s.State == v1alpha1.InterfaceFailed:
			failed = append(failed, fmt.Sprintf("node %s: %s: %s", a.NodeID, a.ENIID, orDefault(s.Message, "failed")))
		case ok:
			// Pending, or a state this operator does not know yet: the
			// agent is running there and says why it is not done.
			pending = append(pending, fmt.Sprintf("node %s: %s: %s", a.NodeID, a.ENIID, orDefault(s.Message, "pending")))
		default:
			if left := grace - now.Sub(a.LastUpdated.Time); left > 0 {
				pending = append(pending, fmt.Sprintf("node %s: %s: waiting for the eni-agent's report", a.NodeID, a.ENIID))
				if recheck == 0 || left < recheck {
					recheck = left
				}
			} else {
				pending = append(pending, fmt.Sprintf("no report from eni-agent on node %s for %s: is the eni-agent DaemonSet running there?", a.NodeID, a.ENIID))
			}
		}
	}
	switch {
	case attached == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonNoAttachments, "no ENI is attached"
	case len(failed) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonInterfaceFailed
		c.Message = fmt.Sprintf("%d of %d attached ENIs failed: %s", len(failed), attached, listed(failed))
		if len(pending) > 0 {
			c.Message += fmt.Sprintf("; %d more not configured yet", len(pending))
		}
	case len(pending) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonPending
		c.Message = fmt.Sprintf("%d of %d attached ENIs not configured yet: %s", len(pending), attached, listed(pending))
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonConfigured
		c.Message = fmt.Sprintf("all %d attached ENIs on %d nodes configured by the eni-agent", attached, len(nodes))
	}
	return c, recheck
}

// listed joins lines sorted (the attachments' order is the plan's, which
// must not show in the message), naming at most maxListedNodes and
// leaving room in bounded.Message for the condition's own words: each
// line quotes an agent's message, which may itself be 1 KiB.
func listed(lines []string) string {
	sorted := slices.Sorted(slices.Values(lines))
	return bounded.ListWithin(sorted, "; ", maxListedNodes, bounded.Message-listedHeadroom)
}

// listedHeadroom is what the InterfacesConfigured message adds around the
// list ("3 of 40 attached ENIs failed: ", "; 2 more not configured yet").
const listedHeadroom = 128

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// interfacesChanged passes the NodeENI updates that change what the
// agents reported (status.interfaces), lastUpdated aside: the controller
// must aggregate them, and generation changes do not cover status writes.
// The controller's own status writes never change status.interfaces (it
// keeps the entries it read, and a merge patch leaves out what did not
// change), so they do not pass and cannot start a loop.
func interfacesChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeENI)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeENI)
			if !okOld || !okNew {
				return true
			}
			return !sameReports(o.Status.Interfaces, n.Status.Interfaces)
		},
	}
}

// sameReports compares two status.interfaces lists as sets keyed by node
// and ENI, order and lastUpdated aside.
func sameReports(a, b []v1alpha1.InterfaceStatus) bool {
	if len(a) != len(b) {
		return false
	}
	type key struct{ node, eni string }
	byKey := make(map[key]v1alpha1.InterfaceStatus, len(a))
	for _, s := range a {
		s.LastUpdated = metav1.Time{}
		byKey[key{s.NodeID, s.ENIID}] = s
	}
	for _, s := range b {
		s.LastUpdated = metav1.Time{}
		if o, ok := byKey[key{s.NodeID, s.ENIID}]; !ok || o != s {
			return false
		}
	}
	return true
}
