package security

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

// TestIssue36PodAddressAttacks replays, on the whole operator, the
// attacks on Multus address registration of issue 36's findings 1 and 2:
//   - a pod in another namespace forges a network status naming the
//     node's second registering ENI of the subnet and a running pod's
//     address (before: Unassign on the holder's ENI, Assign on the
//     second, the record crediting the thief);
//   - another tool assigns an address on the NodeENI's ENI, and a pod
//     claims it at once (before: recorded as the pod's inside the
//     inventory's window, unassigned when the pod went);
//   - a pod claims the primary address of an ENI outside the operator's
//     inventory (before: ~100 Assign calls in its first second, then 5 a
//     second), and one claims an address AWS reserves in the subnet.
//
// Must hold after several inventory refreshes: no AssignPrivateIpAddresses
// names a claimed address that is not free, no UnassignPrivateIpAddresses
// names the holder's ENI, the holder's ENI still holds both addresses, the
// record credits the holder, and EC2 was asked about the foreign address
// at most twice.
func TestIssue36PodAddressAttacks(t *testing.T) {
	ctx := context.Background()
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge")))
	admin := emulator.NewAdminClient(e.URL)
	instance := e.World.Instances[0].ID
	other := e.Client(ec2.Config{VPCID: e.VPC, QPS: 1000, Burst: 1000})

	cl := operatorenv.NewOneNode(t, "prod", instance)
	registers(t, cl.K8s, cl.NodeENI.Name)
	second := testenv.CreateNodeENI(t, cl.K8s, "multus-second", "multus", "multus-a")
	patchSpec(t, cl.K8s, second, func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 2 })
	registers(t, cl.K8s, second.Name)
	oc := cl.Config(e.VPC)
	oc.Registerer = prometheus.NewRegistry() // one operator after another in this process
	cl.Start(t, e.URL, oc)

	var holderENI, thiefENI awstypes.ENI
	eventually(t, "both NodeENIs' ENIs attached", func() (bool, string) {
		en := &v1alpha1.ENINode{}
		_ = cl.K8s.Get(ctx, client.ObjectKey{Name: cl.Node}, en)
		ids := map[string]string{}
		for _, a := range en.Spec.Attachments {
			if a.Status == v1alpha1.AttachmentAttached {
				ids[a.NodeENI] = a.ENIID
			}
		}
		if len(ids) < 2 {
			return false, fmt.Sprintf("%+v", en.Spec.Attachments)
		}
		holderENI, thiefENI = e.ENI(t, ids[cl.NodeENI.Name]), e.ENI(t, ids[second.Name])
		return true, ""
	})
	const held, late = "10.0.32.6", "10.0.32.150"
	multusPod(t, cl.K8s, cl.AppsNS, "cnf-0", cl.Node, holderENI.MAC, held)
	eventually(t, "the holder's address on its ENI", func() (bool, string) {
		got := e.ENI(t, holderENI.ID).SecondaryIPs
		return slices.Contains(got, held), fmt.Sprint(got)
	})
	foreign, err := other.CreateENI(ctx, awstypes.CreateENIInput{SubnetID: e.Subnets["multus-a"], SecurityGroups: []string{e.Groups["multus"]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.AssignAddresses(ctx, holderENI.ID, ec2.Addresses{IPv4: []string{late}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.ResetCounts(ctx); err != nil {
		t.Fatal(err)
	}

	thieves := cl.Cluster + "-thieves"
	testenv.CreateNamespaces(t, cl.K8s, thieves)
	multusPod(t, cl.K8s, thieves, "thief", cl.Node, thiefENI.MAC, held)
	multusPod(t, cl.K8s, cl.AppsNS, "late", cl.Node, holderENI.MAC, late)
	multusPod(t, cl.K8s, thieves, "squatter", cl.Node, holderENI.MAC, foreign.PrimaryIP)
	multusPod(t, cl.K8s, thieves, "reserved", cl.Node, holderENI.MAC, "10.0.32.1")
	for _, ne := range []string{cl.NodeENI.Name, second.Name} {
		eventually(t, ne+" says an address is taken", func() (bool, string) {
			c := podAddressCondition(t, cl.K8s, ne)
			return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "thief"), fmt.Sprintf("%+v", c)
		})
	}
	start := len(clusterListings(t, admin))
	eventually(t, "five more inventory refreshes", func() (bool, string) {
		n := len(clusterListings(t, admin)) - start
		return n >= 5, fmt.Sprintf("%d refreshes", n)
	})
	if err := cl.K8s.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: cl.AppsNS, Name: "late"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two more inventory refreshes after the late pod went", func() (bool, string) {
		n := len(clusterListings(t, admin)) - start
		return n >= 7, fmt.Sprintf("%d refreshes", n)
	})

	calls, err := admin.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, c := range calls {
		names := func(v string) bool {
			for _, values := range c.Params {
				if slices.Contains(values, v) {
					return true
				}
			}
			return false
		}
		switch c.Action {
		case "AssignPrivateIpAddresses":
			for _, a := range []string{held, late, foreign.PrimaryIP, "10.0.32.1"} {
				if names(a) {
					t.Errorf("EC2 AssignPrivateIpAddresses named %s: %v", a, c.Params)
				}
			}
		case "UnassignPrivateIpAddresses":
			if names(holderENI.ID) {
				t.Errorf("EC2 UnassignPrivateIpAddresses on the holder's ENI: %v", c.Params)
			}
		case "DescribeNetworkInterfaces":
			if names(foreign.PrimaryIP) {
				asked++
			}
		}
	}
	if asked > 2 {
		t.Errorf("EC2 was asked %d times who holds %s, want at most 2 (backed off)", asked, foreign.PrimaryIP)
	}
	if got := e.ENI(t, holderENI.ID).SecondaryIPs; !slices.Contains(got, held) || !slices.Contains(got, late) {
		t.Errorf("the holder's ENI holds %v, want %s and the other tool's %s", got, held, late)
	}
	en := &v1alpha1.ENINode{}
	if err := cl.K8s.Get(ctx, client.ObjectKey{Name: cl.Node}, en); err != nil {
		t.Fatal(err)
	}
	if rec := en.Spec.PodAddresses; len(rec) != 1 || rec[0].Address != held || rec[0].Pod != cl.AppsNS+"/cnf-0" {
		t.Errorf("record %+v, want the holder's entry alone", rec)
	}
}

// registers turns on a NodeENI's Multus address registration.
func registers(t *testing.T, k8s client.Client, name string) {
	t.Helper()
	ne := &v1alpha1.NodeENI{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		t.Fatal(err)
	}
	patchSpec(t, k8s, ne, func(s *v1alpha1.NodeENISpec) { s.Multus = &v1alpha1.MultusSpec{RegisterPodAddresses: true} })
}

func patchSpec(t *testing.T, k8s client.Client, ne *v1alpha1.NodeENI, change func(*v1alpha1.NodeENISpec)) {
	t.Helper()
	old := ne.DeepCopy()
	change(&ne.Spec)
	if err := k8s.Patch(context.Background(), ne, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
}

// multusPod creates a running pod on node whose network status, as
// Multus writes it (or as its author forges it), names mac with addr.
func multusPod(t *testing.T, k8s client.Client, ns, name, node, mac, addr string) {
	t.Helper()
	status := fmt.Sprintf(`[{"name":"aws-cni","interface":"eth0","ips":["10.0.128.9"],"mac":"0a:00:00:00:00:01","default":true},`+
		`{"name":"%s/data-plane","interface":"net1","ips":[%q],"mac":%q}]`, ns, addr, mac)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{podaddrs.NetworkStatusAnnotation: status}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "cnf"}}}}
	if !testenv.CreatePod(t, k8s, p, testenv.Running("10.0.128.9")) {
		t.FailNow()
	}
}

func podAddressCondition(t *testing.T, k8s client.Client, name string) *metav1.Condition {
	t.Helper()
	ne := &v1alpha1.NodeENI{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		t.Fatal(err)
	}
	for i := range ne.Status.Conditions {
		if ne.Status.Conditions[i].Type == v1alpha1.ConditionPodAddressesRegistered {
			return &ne.Status.Conditions[i]
		}
	}
	return nil
}
