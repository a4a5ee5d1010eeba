package podaddrs

import (
	"errors"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodStates(t *testing.T) {
	assigned := func(ss ...string) execResult {
		o := execResult{assigned: map[netip.Addr]bool{}}
		for _, a := range addrs(ss...) {
			o.assigned[a] = true
		}
		return o
	}
	for _, c := range []struct {
		name   string
		claim  podClaim
		in     func(*input)
		d      decision
		done   execResult
		ready  bool
		reason string
	}{
		{name: "assigned by the pass", claim: claim("ns/p", macA, "10.0.1.20", "2600:1f18::20"), done: assigned("10.0.1.20", "2600:1f18::20"),
			ready: true, reason: ReasonRegistered},
		{name: "held before the pass", claim: claim("ns/p", macA, "10.0.1.20"), in: func(in *input) { in.Interfaces = interfaces("10.0.1.20") },
			ready: true, reason: ReasonRegistered},
		{name: "the ENI's primary address (host-device)", claim: claim("ns/p", macA, "10.0.1.4"), ready: true, reason: ReasonRegistered},
		{name: "one address not assigned yet (throttled, or moving)", claim: claim("ns/p", macA, "10.0.1.20", "10.0.1.21"), done: assigned("10.0.1.20"),
			reason: ReasonPending},
		{name: "refused before the call", claim: claim("ns/p", macA, "10.0.1.20"),
			d: decision{Refused: []refusal{{Pod: "ns/p", Reason: ReasonAddressLimit, Message: "full"}}}, reason: ReasonAddressLimit},
		{name: "refused by EC2", claim: claim("ns/p", macA, "10.0.1.20"),
			done: execResult{refused: []refusal{{Pod: "ns/p", Reason: ReasonAssignFailed, Message: "no"}}}, reason: ReasonAssignFailed},
		{name: "an interface of a NodeENI that does not register", claim: claim("ns/p", macB, "10.0.2.20"), reason: ReasonNoInterface},
		{name: "Multus has not written the status", claim: podClaim{Pod: "ns/p", NoStatus: true}, reason: ReasonPending},
		{name: "an unreadable status", claim: podClaim{Pod: "ns/p", Err: errors.New("not JSON")},
			d: decision{Refused: []refusal{{Pod: "ns/p", Reason: ReasonBadNetworkState, Message: "not JSON"}}}, reason: ReasonBadNetworkState},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := input{Interfaces: interfaces(), Claims: []podClaim{c.claim}}
			if c.in != nil {
				c.in(&in)
			}
			got, ok := podStates("n0", in, c.d, c.done)["ns/p"]
			if !ok || got.Ready != c.ready || got.Reason != c.reason || got.Message == "" {
				t.Errorf("state %+v (%v), want ready %v reason %s and a message", got, ok, c.ready, c.reason)
			}
		})
	}
}

// The pod cache keeps a gated pod, with its gate and the gate's
// condition, even before Multus writes its network status; an ungated
// pod without a secondary network is a stub.
func TestKeepGatedPods(t *testing.T) {
	transform := keepMultusPods()
	gate := []corev1.PodReadinessGate{{ConditionType: "other"}, {ConditionType: GateCondition}}
	conds := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, {Type: GateCondition, Status: corev1.ConditionFalse, Reason: ReasonPending}}
	pod := func(gates []corev1.PodReadinessGate) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"big": "x"}},
			Spec: corev1.PodSpec{NodeName: "n0", ReadinessGates: gates, Containers: []corev1.Container{{Name: "c"}}}, Status: corev1.PodStatus{Conditions: conds}}
	}
	kept, _ := transform(pod(gate))
	p, ok := kept.(*corev1.Pod)
	if !ok || p.Spec.NodeName != "n0" || len(p.Spec.ReadinessGates) != 1 || len(p.Status.Conditions) != 1 ||
		p.Status.Conditions[0].Reason != ReasonPending || p.Labels != nil || p.Spec.Containers != nil || p.Annotations != nil {
		t.Errorf("gated pod kept as %+v", kept)
	}
	if stub, _ := transform(pod(nil)); stub.(metav1.Object).GetName() != "p" {
		t.Errorf("ungated pod kept as %+v", stub)
	} else if _, full := stub.(*corev1.Pod); full {
		t.Errorf("ungated pod without a network status kept whole: %+v", stub)
	}
}
