package podaddrs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// GateCondition is the pod condition a pod names in its readinessGates
// to become Ready only once the VPC delivers to its Multus addresses:
// Multus gives the pod its address before the operator has assigned it
// on the ENI, and a rollout would otherwise count the pod Ready while
// its secondary network drops traffic.
const GateCondition = "eni-operator.io/addresses-registered"

// Reasons of the gate condition besides Registered and the refusals'.
const (
	ReasonPending     = "Pending"
	ReasonNoInterface = "NoRegisteringInterface"
)

// gateFieldOwner is the server-side apply field manager of the gate
// condition.
const gateFieldOwner = "eni-operator-podaddrs"

// podState is what a gated pod's condition says.
type podState struct {
	Ready           bool
	Reason, Message string
}

// podStates says, for each pod, whether every address it claims on an
// ENI that registers addresses is on that ENI after the pass: held
// before, or assigned by it.
func podStates(node string, in input, d decision, done execResult) map[string]podState {
	byMAC := registeringByMAC(in.Interfaces)
	refused := map[string]refusal{}
	for _, f := range slices.Concat(d.Refused, done.refused) {
		if _, seen := refused[f.Pod]; !seen {
			refused[f.Pod] = f
		}
	}
	out := map[string]podState{}
	for _, c := range in.Claims {
		if c.NoStatus {
			out[c.Pod] = podState{Reason: ReasonPending, Message: "waiting for Multus to write the pod's network status (" + NetworkStatusAnnotation + ")"}
			continue
		}
		if f, ok := refused[c.Pod]; ok {
			out[c.Pod] = podState{Reason: f.Reason, Message: f.Message}
			continue
		}
		var registered, pending []string
		enis := map[string]bool{}
		for _, n := range c.Networks {
			f := byMAC[n.MAC]
			if f == nil {
				continue
			}
			enis[f.ENI] = true
			for _, a := range n.Addresses {
				if a == f.Primary || f.Held[a] || done.assigned[a] {
					registered = append(registered, a.String())
				} else {
					pending = append(pending, a.String())
				}
			}
		}
		on := strings.Join(slices.Sorted(maps.Keys(enis)), ", ")
		switch {
		case len(enis) == 0:
			out[c.Pod] = podState{Reason: ReasonNoInterface, Message: fmt.Sprintf(
				"the pod's network status names no interface of a NodeENI that registers addresses (multus.registerPodAddresses) on node %s", node)}
		case len(pending) > 0:
			out[c.Pod] = podState{Reason: ReasonPending, Message: fmt.Sprintf("waiting for %s to be assigned on ENI %s", addressList(pending), on)}
		default:
			out[c.Pod] = podState{Ready: true, Reason: ReasonRegistered, Message: fmt.Sprintf("%s assigned on ENI %s", addressList(registered), on)}
		}
	}
	return out
}

// addressList names up to 4 addresses (a pod claims at most 8).
func addressList(addrs []string) string {
	if len(addrs) > 4 {
		return strings.Join(addrs[:4], ", ") + " and more"
	}
	return strings.Join(addrs, ", ")
}

// gated reports whether a pod names the gate condition in its
// readinessGates.
func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == GateCondition })
}

// gate writes the gate condition of the node's gated pods where it
// changed: a server-side apply of that one condition, so no other
// condition of the pod is touched.
func (r *reconciler) gate(ctx context.Context, p *pass) *phases.Stop {
	states := podStates(p.node, p.in, p.d, p.done)
	for key, pod := range p.pods {
		s, ok := states[key]
		if !ok || !gated(pod) {
			continue
		}
		status := corev1.ConditionFalse
		if s.Ready {
			status = corev1.ConditionTrue
		}
		msg := bounded.Truncate(s.Message, bounded.Message)
		transition := metav1.Now()
		if c := gateConditionOf(pod); c != nil {
			if c.Status == status && c.Reason == s.Reason && c.Message == msg {
				continue
			}
			if c.Status == status {
				transition = c.LastTransitionTime
			}
		}
		apply := corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
			corev1ac.PodCondition().WithType(GateCondition).WithStatus(status).WithReason(s.Reason).WithMessage(msg).
				WithLastTransitionTime(transition)))
		if err := r.client.Status().Apply(ctx, apply, client.FieldOwner(gateFieldOwner), client.ForceOwnership); client.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).Error(err, "writing the pod's readiness gate condition; trying again", "pod", key, "condition", GateCondition)
			p.done.retry = true
		}
	}
	return nil
}

// gateAlone ends the pass of a node with no ENI to register on by
// answering its gated pods (NoRegisteringInterface, or Pending before
// Multus): they would otherwise wait without a word.
func (r *reconciler) gateAlone(ctx context.Context, p *pass) *phases.Stop {
	var err error
	if p.pods, p.in.Claims, err = r.claims(ctx, p.node); err != nil {
		return phases.Done(err)
	}
	p.in.Interfaces, p.d, p.done = nil, decision{}, execResult{}
	r.gate(ctx, p)
	if p.done.retry {
		return phases.After(retryAfter)
	}
	return phases.Done(nil)
}

func gateConditionOf(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == GateCondition {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// keepGate is what the pod cache keeps of a pod's readiness gate and
// its condition.
func keepGate(p *corev1.Pod) ([]corev1.PodReadinessGate, []corev1.PodCondition) {
	if !gated(p) {
		return nil, nil
	}
	gates := []corev1.PodReadinessGate{{ConditionType: GateCondition}}
	if c := gateConditionOf(p); c != nil {
		return gates, []corev1.PodCondition{*c}
	}
	return gates, nil
}
