// Package readiness lifts the readiness taint (TaintKey) off a node once
// every NodeENI selecting it has its ENIs attached and configured by the
// node's agent, so pods that need the secondary network are not
// scheduled onto a node before it has one. Nodes opt in by being
// registered with the taint (kubelet --register-with-taints, Karpenter's
// startupTaints); the operator only ever removes it.
package readiness

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awsnode"
)

// TaintKey is the readiness taint, with effect NoSchedule.
const TaintKey = "eni-operator.io/interfaces-not-ready"

// tainted reports whether a node carries the readiness taint.
func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
}

// waiting returns what a node still waits for, one line per NodeENI that
// selects it and has not got its interfaces up there; none when the
// taint can go. A NodeENI's share of the node is complete when it has
// seen its current spec (observedGeneration), has one attached ENI per
// subnet of the node's zone in the node's ENINode, and the node's agent
// reports each of them Configured.
func waiting(n *corev1.Node, nodeENIs []v1alpha1.NodeENI, en *v1alpha1.ENINode) []string {
	zone := awsnode.Zone(n)
	var out []string
	for i := range nodeENIs {
		ne := &nodeENIs[i]
		if !ne.DeletionTimestamp.IsZero() || !labels.SelectorFromSet(ne.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
			continue
		}
		if why := shareWaits(ne, zone, en); why != "" {
			out = append(out, fmt.Sprintf("NodeENI %s: %s", ne.Name, why))
		}
	}
	return out
}

func shareWaits(ne *v1alpha1.NodeENI, zone string, en *v1alpha1.ENINode) string {
	if ne.Status.ObservedGeneration != ne.Generation {
		return "its controller has not acted on its current spec yet"
	}
	want := 0
	for _, s := range ne.Status.Subnets {
		if s.Zone == zone {
			want++
		}
	}
	if want == 0 {
		return fmt.Sprintf("none of its subnets is in the node's zone %q (see its Degraded condition)", zone)
	}
	configured := map[string]bool{}
	for _, i := range en.Status.Interfaces {
		configured[i.ENIID] = i.State == v1alpha1.InterfaceConfigured
	}
	attached, ready := 0, 0
	for _, a := range en.Spec.Attachments {
		if a.NodeENI != ne.Name || a.Status != v1alpha1.AttachmentAttached {
			continue
		}
		attached++
		if configured[a.ENIID] {
			ready++
		}
	}
	switch {
	case attached < want:
		return fmt.Sprintf("%d of its %d ENIs attached", attached, want)
	case ready < attached:
		return fmt.Sprintf("%d of %d interfaces configured by the node's eni-agent", ready, attached)
	}
	return ""
}
