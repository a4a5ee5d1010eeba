package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/readiness"
)

// The whole operator and this node's agent in its network namespace: a
// node registered with the readiness taint keeps it while its NodeENI's
// ENI is created and attached and while no interface with the ENI's MAC
// is on the host; once the agent has configured the interface (up, MTU),
// the operator lifts the taint. Then a Multus pod on the interface gets
// its address assigned on that ENI, and loses it with the pod.
func TestReadinessTaintWaitsForTheAgent(t *testing.T) {
	w := newWorld(t, "n0", 0)
	ctx := context.Background()
	ops := w.prefix + "-ops"
	testenv.CreateNamespaces(t, w.k8s, ops)
	testenv.CreateNode(t, w.k8s, testenv.Node{Name: w.node, Instance: w.inst, Zone: "us-east-1a", Labels: map[string]string{"role": w.prefix}})
	t.Cleanup(func() { _ = w.k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.node}}) })
	n := &corev1.Node{}
	if err := w.k8s.Get(ctx, client.ObjectKey{Name: w.node}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: readiness.TaintKey, Effect: corev1.TaintEffectNoSchedule})
	if err := w.k8s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.name("ready")}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"role": w.prefix}, SubnetID: w.subnet, SecurityGroupIDs: []string{w.sg}, DeviceIndex: 1, MTU: 9001, InterfaceName: "data",
		Multus: &v1alpha1.MultusSpec{RegisterPodAddresses: true}}}
	if err := w.k8s.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.k8s.Delete(ctx, ne) })

	c := operatorenv.Config("c-"+w.prefix, w.ec2.VPC, ops)
	c.EnableTagger = false
	operatorenv.Start(t, shared.Env(t).Config, w.ec2.URL, c)
	w.start(w.options(), nil)

	tainted := func() bool {
		n := &corev1.Node{}
		_ = w.k8s.Get(ctx, client.ObjectKey{Name: w.node}, n)
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == readiness.TaintKey })
	}
	var att v1alpha1.ENIAttachment
	w.eventually("the ENI attached and reported Pending (no link with its MAC yet)", func() (bool, string) {
		en := &v1alpha1.ENINode{}
		if err := w.k8s.Get(ctx, client.ObjectKey{Name: w.node}, en); err != nil {
			return false, err.Error()
		}
		for _, a := range en.Spec.Attachments {
			if a.Status == v1alpha1.AttachmentAttached {
				att = a
			}
		}
		var s v1alpha1.InterfaceStatus
		for _, i := range en.Status.Interfaces {
			if i.ENIID == att.ENIID {
				s = i
			}
		}
		return att.ENIID != "" && s.State == v1alpha1.InterfacePending, fmt.Sprintf("attachments %+v, report %+v", en.Spec.Attachments, s)
	})
	if !tainted() {
		t.Fatal("the taint was lifted while the interface is not on the host")
	}

	w.addLink("eth1", att.MACAddress, 1500)
	w.eventually("the taint lifted", func() (bool, string) { return !tainted(), "still tainted" })
	l, ok := w.linkByMAC(att.MACAddress)
	if !ok || l.Name != "data" || !l.Up || l.MTU != 9001 {
		t.Fatalf("taint lifted with the interface %+v (found %v); want data, up, MTU 9001", l, ok)
	}

	// A Multus pod on the interface (its network status as Multus writes it).
	apps := w.prefix + "-apps"
	testenv.CreateNamespaces(t, w.k8s, apps)
	addr := "10.0.32.200" // in multus-a
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cnf", Namespace: apps, Annotations: map[string]string{
		"k8s.v1.cni.cncf.io/network-status": fmt.Sprintf(`[{"name":"%s/data","interface":"net1","ips":["%s"],"mac":"%s"}]`, apps, addr, att.MACAddress)}},
		Spec: corev1.PodSpec{NodeName: w.node, Containers: []corev1.Container{{Name: "c", Image: "cnf"}}}}
	testenv.CreatePod(t, w.k8s, pod, testenv.Running("10.0.128.5"))
	onENI := func() bool { return slices.Contains(w.ec2.ENI(t, att.ENIID).SecondaryIPs, addr) }
	w.eventually("the pod's address on its ENI", func() (bool, string) { return onENI(), fmt.Sprint(w.ec2.ENI(t, att.ENIID).SecondaryIPs) })
	if err := w.k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	w.eventually("the address unassigned with the pod", func() (bool, string) { return !onENI(), fmt.Sprint(w.ec2.ENI(t, att.ENIID).SecondaryIPs) })
}
