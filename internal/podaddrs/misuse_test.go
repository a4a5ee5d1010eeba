package podaddrs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

// secondNodeENI makes a second registering NodeENI of the world's
// subnet on the node (device index 2) and returns its ENI once attached.
func (w *world) secondNodeENI() (string, awstypes.ENI) {
	name := w.label + "-b"
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"test": w.label}, SubnetName: "multus-a", SecurityGroupNames: []string{"multus"}, DeviceIndex: 2,
		Multus: &v1alpha1.MultusSpec{RegisterPodAddresses: true}}}
	if err := w.k8s.Create(context.Background(), ne); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = w.k8s.Delete(context.Background(), ne) })
	var id string
	w.eventually("the second NodeENI's ENI attached", func() (bool, string) {
		for _, a := range w.eniNode().Spec.Attachments {
			if a.NodeENI == name && a.Status == v1alpha1.AttachmentAttached {
				id = a.ENIID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", w.eniNode().Spec.Attachments)
	})
	return name, w.ENI(w.t, id)
}

// podIn is multusPod in namespace ns, with the readiness gate when gated.
func (w *world) podIn(ns, name, mac string, gated bool, addrs ...string) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus(mac, addrs...)}},
		Spec: corev1.PodSpec{NodeName: w.node(), Containers: []corev1.Container{{Name: "c", Image: "cnf"}}}}
	status := testenv.Running("10.0.128.9")
	if gated {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podaddrs.GateCondition}}
		status = readyContainers()
	}
	testenv.CreatePod(w.t, w.k8s, p, status)
}

// eventOn waits for an event of reason on pod ns/name and returns its note.
func (w *world) eventOn(ns, name, reason string) string {
	w.t.Helper()
	var note string
	w.eventually(fmt.Sprintf("a %s event on %s/%s", reason, ns, name), func() (bool, string) {
		var list eventsv1.EventList
		_ = w.k8s.List(context.Background(), &list, client.InNamespace(ns))
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
				note = e.Note
				return true, ""
			}
		}
		return false, fmt.Sprint(len(list.Items), " events")
	})
	return note
}

// conditionOf returns a NodeENI's PodAddressesRegistered condition.
func (w *world) conditionOf(nodeENI string) *metav1.Condition {
	return meta.FindStatusCondition(testenv.GetNodeENI(w.t, w.k8s, nodeENI).Status.Conditions, v1alpha1.ConditionPodAddressesRegistered)
}

// A pod anywhere that forges a network status naming the node's second
// ENI of the subnet and a running pod's address is refused it: the
// address stays on the holder's ENI, the record credits the holder, its
// gate stays open, and both NodeENIs and an event on the claimant say so.
func TestNoPodTakesAnotherPodsAddress(t *testing.T) {
	w := newWorld(t)
	w.start()
	eniA := w.attached()
	nameB, eniB := w.secondNodeENI()
	w.podIn(w.ns, "cnf-0", eniA.MAC, true, "10.0.32.6")
	w.gateIs("cnf-0", corev1.ConditionTrue, podaddrs.ReasonRegistered)
	w.Emulator.ResetCounts()

	thieves := w.ns + "-other"
	testenv.CreateNamespaces(t, w.k8s, thieves)
	w.podIn(thieves, "thief", eniB.MAC, false, "10.0.32.6")
	note := w.eventOn(thieves, "thief", podaddrs.ReasonAddressTaken)
	if !strings.Contains(note, w.ns+"/cnf-0") {
		t.Errorf("the refusal does not name the holder: %q", note)
	}
	for _, ne := range []string{w.label, nameB} {
		w.eventually("NodeENI "+ne+" says the address is taken", func() (bool, string) {
			c := w.conditionOf(ne)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == podaddrs.ReasonAddressTaken, fmt.Sprintf("%+v", c)
		})
	}
	if c := w.Calls(); c["UnassignPrivateIpAddresses"] != 0 || c["AssignPrivateIpAddresses"] != 0 {
		t.Errorf("calls %v after the forged claim, want no assign or unassign", c)
	}
	if got := w.secondaries(eniA.ID); !slices.Equal(got, []string{"10.0.32.6"}) {
		t.Errorf("the holder's ENI holds %v", got)
	}
	if rec := w.eniNode().Spec.PodAddresses; len(rec) != 1 || rec[0].Pod != w.ns+"/cnf-0" || rec[0].ENIID != eniA.ID {
		t.Errorf("record %+v, want the holder's entry alone", rec)
	}
	if c := w.gateOf("cnf-0"); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("the holder's gate: %+v", c)
	}
}

// An address another tool assigned on the ENI after the operator's last
// inventory is read from EC2 when a pod claims it: never recorded as the
// pod's, so never unassigned when the pod goes.
func TestAddressAssignedMomentsAgoStaysItsAssigners(t *testing.T) {
	w := newWorld(t)
	w.inventory = time.Hour // the operator's picture does not see the other tool's change
	w.start()
	eni := w.attached()
	w.eventually("the pass after the attachment", func() (bool, string) {
		c := w.condition()
		return c != nil && strings.Contains(c.Message, "registered: 0,"), fmt.Sprintf("%+v", c)
	})
	admin := w.Client(ec2.Config{VPCID: w.VPC})
	if err := admin.AssignAddresses(context.Background(), eni.ID, ec2.Addresses{IPv4: []string{"10.0.32.150"}}); err != nil {
		t.Fatal(err)
	}
	w.multusPod("p1", eni.MAC, "10.0.32.150")
	w.eventually("the pod's address counted in place", func() (bool, string) {
		c := w.condition()
		return c != nil && strings.Contains(c.Message, "registered: 1,"), fmt.Sprintf("%+v", c)
	})
	if rec := w.eniNode().Spec.PodAddresses; len(rec) != 0 {
		t.Errorf("the other tool's address recorded as the pod's: %+v", rec)
	}
	w.Emulator.ResetCounts()
	w.deletePod("p1")
	w.eventually("the pod gone from the count", func() (bool, string) {
		c := w.condition()
		return c != nil && strings.Contains(c.Message, "registered: 0,"), fmt.Sprintf("%+v", c)
	})
	if n := w.Calls()["UnassignPrivateIpAddresses"]; n != 0 {
		t.Errorf("%d UnassignPrivateIpAddresses of an address the operator did not assign", n)
	}
	if got := w.secondaries(eni.ID); !slices.Equal(got, []string{"10.0.32.150"}) {
		t.Errorf("the ENI holds %v, want the other tool's address kept", got)
	}
}

// lookups counts the DescribeNetworkInterfaces that ask who holds an
// address (the inventory's reads ask by tag).
func (w *world) lookups(addr string) int {
	n := 0
	for _, c := range w.Emulator.Calls() {
		if c.Action != "DescribeNetworkInterfaces" {
			continue
		}
		for k, v := range c.Params {
			if strings.HasPrefix(k, "Filter.") && slices.Contains(v, addr) {
				n++
				break
			}
		}
	}
	return n
}

// A pod claiming an address an ENI outside the operator's inventory
// holds is refused on EC2's word and asked about again only with
// exponential backoff, however often its node's pass runs: no
// AssignPrivateIpAddresses at all, 4 questions in 5 minutes (0, 30 s,
// 90 s, 210 s), and the ENINode's generation does not move.
func TestRefusedClaimBacksOff(t *testing.T) {
	w := newWorld(t)
	clk := clocktesting.NewFakeClock(time.Now())
	w.clock = clk
	w.start()
	eni := w.attached()
	admin := w.Client(ec2.Config{VPCID: w.VPC})
	foreign, err := admin.CreateENI(context.Background(), awstypes.CreateENIInput{SubnetID: w.Subnets["multus-a"], SecurityGroups: []string{w.Groups["multus"]}})
	if err != nil {
		t.Fatal(err)
	}
	w.eventually("the pass after the attachment", func() (bool, string) {
		c := w.condition()
		return c != nil && strings.Contains(c.Message, "registered: 0,"), fmt.Sprintf("%+v", c)
	})
	gen := w.eniNode().Generation
	w.Emulator.ResetCounts()

	w.multusPod("p1", eni.MAC, foreign.PrimaryIP)
	w.eventOn(w.ns, "p1", podaddrs.ReasonAddressTaken)
	asked := 1
	due := map[time.Duration]bool{30 * time.Second: true, 90 * time.Second: true, 210 * time.Second: true}
	for at := 10 * time.Second; at < 5*time.Minute; at += 10 * time.Second {
		clk.Step(10 * time.Second)
		w.touch("p1", fmt.Sprint(at))
		if due[at] {
			asked++
		}
		w.eventually(fmt.Sprintf("%d questions by %s", asked, at), func() (bool, string) {
			n := w.lookups(foreign.PrimaryIP)
			return n == asked, fmt.Sprint(n)
		})
	}
	if n := w.Calls()["AssignPrivateIpAddresses"]; n != 0 {
		t.Errorf("%d AssignPrivateIpAddresses of an address another ENI holds", n)
	}
	if g := w.eniNode().Generation; g != gen {
		t.Errorf("the ENINode's generation moved %d → %d", gen, g)
	}
}

// touch changes a label of pod name, so its node's pass runs again.
func (w *world) touch(name, value string) {
	p := &corev1.Pod{}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, p); err != nil {
		w.t.Fatal(err)
	}
	old := p.DeepCopy()
	p.Labels = map[string]string{"touch": strings.NewReplacer(" ", "", ".", "-").Replace(value)}
	if err := w.k8s.Patch(context.Background(), p, client.MergeFrom(old)); err != nil {
		w.t.Fatal(err)
	}
}

// Addresses AWS reserves in every subnet (its first four and its last)
// are refused before any call.
func TestReservedAddressesAreRefusedWithoutACall(t *testing.T) {
	w := newWorld(t)
	w.start()
	eni := w.attached()
	w.Emulator.ResetCounts()
	w.multusPod("low", eni.MAC, "10.0.32.1")
	w.multusPod("high", eni.MAC, "10.0.47.255")
	w.eventOn(w.ns, "low", podaddrs.ReasonReserved)
	w.eventOn(w.ns, "high", podaddrs.ReasonReserved)
	if n := w.Calls()["AssignPrivateIpAddresses"]; n != 0 {
		t.Errorf("%d AssignPrivateIpAddresses of reserved addresses", n)
	}
}
