package readiness_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/readiness"
)

var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

const waitFor = 20 * time.Second

// The taint stays on a selected node while its ENI is being attached
// and until the node's agent reports the interface configured; a
// tainted node no NodeENI selects has nothing to wait for.
func TestTaintLiftedWhenConfigured(t *testing.T) {
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(testenv.OnlySubnets("nodes-a", "multus-a")))
	loaded := e.Load(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.xlarge", Subnet: "nodes-a"}, {Type: "m5.xlarge", Subnet: "nodes-a"}}})
	k8s := testenv.Client(t, shared.Env(t).Config)
	ctx := context.Background()
	taint := corev1.Taint{Key: readiness.TaintKey, Effect: corev1.TaintEffectNoSchedule}
	for i, name := range []string{"selected", "unselected"} {
		testenv.CreateNode(t, k8s, testenv.Node{Name: name, Instance: loaded.Instances[i].ID, Zone: "us-east-1a", Labels: map[string]string{"role": name}})
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		n.Spec.Taints = append(n.Spec.Taints, taint, corev1.Taint{Key: "someone.else/taint", Effect: corev1.TaintEffectNoSchedule})
		if err := k8s.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"role": "selected"}, SubnetName: "multus-a", SecurityGroupNames: []string{"multus"}, DeviceIndex: 1}}
	if err := k8s.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, shared.Env(t).Config, ctrl.Options{}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		cfg := testenv.FastEC2Config(e.VPC)
		cfg.Registerer = reg
		state := ec2.NewState(testenv.EC2Client(e.URL, cfg))
		if err := mgr.Add(state); err != nil {
			return err
		}
		if err := nodeeni.Setup(mgr, state, nodeeni.Options{ClusterName: "c-readiness", Keys: testenv.OwnershipKeys(), ResyncInterval: 300 * time.Millisecond,
			CatalogInterval: time.Minute, DetachPollInterval: 50 * time.Millisecond, CollectorGracePeriod: time.Second, Registerer: reg}); err != nil {
			return err
		}
		return readiness.Setup(mgr, readiness.Options{})
	})
	taints := func(name string) []string {
		n := &corev1.Node{}
		_ = k8s.Get(ctx, client.ObjectKey{Name: name}, n)
		var out []string
		for _, t := range n.Spec.Taints {
			out = append(out, t.Key)
		}
		return out
	}
	// has reports whether a node carries the readiness taint or lost
	// someone else's.
	has := func(name string) (bool, string) {
		got := taints(name)
		return slices.Contains(got, readiness.TaintKey) || !slices.Contains(got, "someone.else/taint"), fmt.Sprint(got)
	}
	testenv.Eventually(t, "the unselected node's taint lifted, the other taint kept", waitFor, func() (bool, string) {
		tainted, got := has("unselected")
		return !tainted, got
	})
	var eni string
	testenv.Eventually(t, "the selected node's ENI attached", waitFor, func() (bool, string) {
		en := &v1alpha1.ENINode{}
		_ = k8s.Get(ctx, client.ObjectKey{Name: "selected"}, en)
		for _, a := range en.Spec.Attachments {
			if a.Status == v1alpha1.AttachmentAttached {
				eni = a.ENIID
			}
		}
		return eni != "", fmt.Sprintf("%+v", en.Spec.Attachments)
	})
	time.Sleep(time.Second)
	if tainted, got := has("selected"); !tainted {
		t.Fatalf("taints %s with the interface attached but not configured; want the readiness taint kept", got)
	}
	// The node's agent reports the interface configured.
	en := &v1alpha1.ENINode{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "selected"}, en); err != nil {
		t.Fatal(err)
	}
	en.Status.Interfaces = []v1alpha1.InterfaceStatus{{ENIID: eni, InterfaceName: "eth1", Up: true, State: v1alpha1.InterfaceConfigured}}
	if err := k8s.Status().Update(ctx, en); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the selected node's taint lifted", waitFor, func() (bool, string) {
		tainted, got := has("selected")
		return !tainted, got
	})
	testenv.Eventually(t, "an event says so", waitFor, func() (bool, string) {
		var list eventsv1.EventList
		_ = k8s.List(ctx, &list)
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == "selected" && e.Reason == readiness.ReasonInterfacesReady {
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, strings.Join(seen, ",")
	})
}
