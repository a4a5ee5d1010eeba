package eniplan

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// InterfacesCondition aggregates the node agents' reports over the
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
func InterfacesCondition(attachments []v1alpha1.ENIAttachment, reports map[ReportKey]v1alpha1.InterfaceStatus, generation int64, now time.Time, grace time.Duration) (metav1.Condition, time.Duration) {
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
		s, ok := reports[ReportKey{Node: a.NodeID, ENI: a.ENIID}]
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

// SameReports compares two status.interfaces lists of an ENINode as
// sets keyed by ENI, order and lastUpdated aside.
func SameReports(a, b []v1alpha1.InterfaceStatus) bool {
	if len(a) != len(b) {
		return false
	}
	byENI := make(map[string]v1alpha1.InterfaceStatus, len(a))
	for _, s := range a {
		s.LastUpdated = metav1.Time{}
		byENI[s.ENIID] = s
	}
	for _, s := range b {
		s.LastUpdated = metav1.Time{}
		if o, ok := byENI[s.ENIID]; !ok || o != s {
			return false
		}
	}
	return true
}
