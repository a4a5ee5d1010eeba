package attachdefs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Reasons of the AttachmentDefinitionsReady condition.
const (
	ReasonSynced            = "Synced"
	ReasonConflict          = "Conflict"
	ReasonNamespaceNotFound = "NamespaceNotFound"
	ReasonCRDNotInstalled   = "CRDNotInstalled"
	ReasonNoSubnets         = "NoSubnets"
	ReasonInvalid           = "InvalidConfiguration"
	ReasonWriteFailed       = "WriteFailed"
	ReasonPodRangePending   = "PodRangePending"
)

// wholeSubnetNote warns a NodeENI whose whereabouts range is its whole
// subnet: EC2 places ENI addresses anywhere in a subnet, and a list of
// the addresses in use today would not hold tomorrow's.
func wholeSubnetNote(ne *v1alpha1.NodeENI) string {
	ad := ne.Spec.Multus.AttachmentDefinition
	if ne.Spec.Multus.PodAddressReservation != nil || ad.IPAM != "" && ad.IPAM != "whereabouts" {
		return ""
	}
	return "; whereabouts hands out the whole subnet, where EC2 also places ENIs' addresses (their primary ones among them): set multus.podAddressReservation to reserve the pods' range"
}

// passResult is what a pass did to the definitions and what stopped it.
type passResult struct {
	written []string // namespace/name, created or updated
	// conflicts are definitions of the wanted names that are not the
	// NodeENI's; missing are namespaces that do not exist.
	conflicts, missing []string
	failures           []string
}

func (o *passResult) noNamespace(ns string) {
	if !slices.Contains(o.missing, ns) {
		o.missing = append(o.missing, ns)
	}
}

// condition is the NodeENI's AttachmentDefinitionsReady condition after
// p; nil when it asks for no definitions. The first problem in the order
// below gives the reason; the message names every one, bounded.
func condition(p *pass) *metav1.Condition {
	if !p.asks {
		return nil
	}
	c := &metav1.Condition{Type: v1alpha1.ConditionAttachmentDefinitionsReady, Status: metav1.ConditionFalse, ObservedGeneration: p.ne.Generation}
	switch {
	case !p.served:
		c.Reason = ReasonCRDNotInstalled
		c.Message = fmt.Sprintf("the NetworkAttachmentDefinition CRD (%s) is not installed: install Multus; the operator looks for it again every minute", GroupVersionKind().GroupVersion())
		return c
	case errors.Is(p.invalid, errPodRangePending):
		c.Reason = ReasonPodRangePending
		c.Message = bounded.Truncate(fmt.Sprintf("no definition written yet: %v; existing definitions are kept", p.invalid), bounded.Message)
		return c
	case p.invalid != nil:
		c.Reason = ReasonInvalid
		c.Message = bounded.Truncate(fmt.Sprintf("no definition written: %v; fix spec.multus.attachmentDefinition (existing definitions are kept)", p.invalid), bounded.Message)
		return c
	case len(p.ne.Status.Subnets) == 0:
		c.Reason = ReasonNoSubnets
		c.Message = "status.subnets is empty: the NodeENI controller has not resolved the spec's subnets yet; the definitions are written once it has"
		return c
	}
	var reasons, problems []string
	if o := p.out; len(o.conflicts) > 0 {
		reasons = append(reasons, ReasonConflict)
		problems = append(problems, fmt.Sprintf("not written: %s: a NetworkAttachmentDefinition of that name exists that this NodeENI did not write (it is left alone); delete or rename it, or set multus.attachmentDefinition.name",
			bounded.List(o.conflicts, ", ", bounded.Items)))
	}
	if o := p.out; len(o.missing) > 0 {
		reasons = append(reasons, ReasonNamespaceNotFound)
		problems = append(problems, fmt.Sprintf("namespaces %s do not exist: create them or remove them from multus.attachmentDefinition.namespaces (retried every minute)",
			bounded.List(o.missing, ", ", bounded.Items)))
	}
	if o := p.out; len(o.failures) > 0 {
		reasons = append(reasons, ReasonWriteFailed)
		problems = append(problems, "failed (retried): "+strings.Join(o.failures, "; "))
	}
	if len(problems) == 0 {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonSynced
		c.Message = fmt.Sprintf("NetworkAttachmentDefinitions written: %d, in namespaces %s",
			len(p.wanted), bounded.List(p.ne.Spec.Multus.AttachmentDefinition.Namespaces, ", ", bounded.Items)) + wholeSubnetNote(p.ne)
		return c
	}
	c.Reason = reasons[0]
	c.Message = bounded.ListWithin(problems, "; ", len(problems), bounded.Message)
	return c
}

// report writes the condition when it changed, with the resource version
// read: other controllers write the other conditions of the same list,
// and a merge patch replaces the whole list. A new conflict is told once,
// as a Warning event and a log line.
func (r *reconciler) report(ctx context.Context, p *pass) error {
	ne := p.ne
	c := condition(p)
	old := ne.DeepCopy()
	prev := meta.FindStatusCondition(old.Status.Conditions, v1alpha1.ConditionAttachmentDefinitionsReady)
	var changed bool
	if c == nil {
		changed = meta.RemoveStatusCondition(&ne.Status.Conditions, v1alpha1.ConditionAttachmentDefinitionsReady)
	} else {
		changed = meta.SetStatusCondition(&ne.Status.Conditions, *c)
	}
	if !changed {
		return nil
	}
	if err := r.client.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	if c == nil {
		return nil
	}
	if prev == nil || prev.Reason != c.Reason || prev.Message != c.Message {
		log.FromContext(ctx).Info("attachment definitions", "ready", c.Status, "reason", c.Reason, "detail", c.Message)
	}
	if c.Reason == ReasonConflict && (prev == nil || prev.Reason != c.Reason || prev.Message != c.Message) {
		r.recorder.Eventf(ne, nil, corev1.EventTypeWarning, ReasonConflict, "WriteAttachmentDefinitions", "%s", c.Message)
	}
	return nil
}
