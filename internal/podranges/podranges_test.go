package podranges_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/ownership"
	"github.com/eni-operator/eni-operator/internal/podranges"
)

var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

// world is one test's EC2 (subnet multus-a, 10.0.32.0/20, with an ENI of
// another tool at 10.0.47.150) and a NodeENI asking for a /26 pods'
// range there, its subnets resolved as the NodeENI controller writes
// them.
type world struct {
	*testenv.EC2
	t       *testing.T
	k8s     client.Client
	name    string
	cluster string
	admin   *ec2.Client
}

func newWorld(t *testing.T) *world {
	e := testenv.NewEC2(t, emulator.Options{}, testenv.DefaultWorld(testenv.OnlySubnets("multus-a"),
		testenv.WithENIs(emulator.NetworkInterfaceSpec{Subnet: "multus-a", PrivateIP: "10.0.47.150"})))
	return &world{EC2: e, t: t, k8s: testenv.Client(t, shared.Env(t).Config), name: strings.ToLower(t.Name()), cluster: "c-" + strings.ToLower(t.Name()),
		admin: e.Client(ec2.Config{VPCID: e.VPC})}
}

func (w *world) start() {
	testenv.StartManager(w.t, shared.Env(w.t).Config, ctrl.Options{}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		cfg := testenv.FastEC2Config(w.VPC)
		cfg.Registerer = reg
		state := ec2.NewState(testenv.EC2Client(w.URL, cfg))
		if err := mgr.Add(state); err != nil {
			return err
		}
		return podranges.Setup(mgr, state, podranges.Options{ClusterName: w.cluster, Keys: testenv.OwnershipKeys(), Resync: time.Second, SkipNameValidation: true})
	})
}

// nodeENI creates the NodeENI and writes its resolved subnet.
func (w *world) nodeENI() *v1alpha1.NodeENI {
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"test": w.name}, SubnetName: "multus-a", SecurityGroupNames: []string{"multus"}, DeviceIndex: 1,
		Multus: &v1alpha1.MultusSpec{PodAddressReservation: &v1alpha1.PodAddressReservationSpec{PrefixLength: 26}}}}
	if err := w.k8s.Create(context.Background(), ne); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		ctx := context.Background()
		got := &v1alpha1.NodeENI{}
		if w.k8s.Get(ctx, client.ObjectKeyFromObject(ne), got) == nil {
			got.Finalizers = nil
			_ = w.k8s.Update(ctx, got)
			_ = w.k8s.Delete(ctx, got)
		}
	})
	old := ne.DeepCopy()
	ne.Status.Subnets = []v1alpha1.ResolvedSubnet{{ID: w.Subnets["multus-a"], Zone: "us-east-1a", CIDR: "10.0.32.0/20"}}
	if err := w.k8s.Status().Patch(context.Background(), ne, client.MergeFrom(old)); err != nil {
		w.t.Fatal(err)
	}
	return ne
}

func (w *world) reservations() []ec2.SubnetCIDRReservation {
	list, err := w.admin.ListSubnetCIDRReservations(context.Background(), w.Subnets["multus-a"])
	if err != nil {
		w.t.Fatal(err)
	}
	return list
}

func (w *world) eventually(what string, cond func() (bool, string)) {
	w.t.Helper()
	testenv.Eventually(w.t, what, 20*time.Second, cond)
}

// proofTags are the tags the operator gives a reservation of cidr.
func (w *world) proofTags(ne *v1alpha1.NodeENI, cidr string) map[string]string {
	return map[string]string{podranges.TagCluster: w.cluster, podranges.TagNodeENI: ne.Name, podranges.TagNodeENIUID: string(ne.UID),
		podranges.TagProof: testenv.OwnershipKeys().SignReservation(ownership.ReservationClaim{Cluster: w.cluster, NodeENIUID: string(ne.UID),
			Subnet: w.Subnets["multus-a"], CIDR: cidr})}
}

// A NodeENI asking for a pods' range gets an explicit reservation of the
// highest free /26 of its subnet (not the top one, which holds the
// subnet's last address, nor the one holding another tool's ENI), its
// proof among the tags it is created with, recorded in the status and
// said in the condition; deleting the NodeENI deletes it.
func TestPodRangeIsReservedAndGoesWithTheNodeENI(t *testing.T) {
	w := newWorld(t)
	w.start()
	ne := w.nodeENI()
	w.eventually("the range reserved and recorded", func() (bool, string) {
		got := testenv.GetNodeENI(t, w.k8s, ne.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionPodAddressesReserved)
		return c != nil && c.Status == metav1.ConditionTrue && len(got.Status.PodAddressReservations) == 1, fmt.Sprintf("%+v %+v", c, got.Status.PodAddressReservations)
	})
	list := w.reservations()
	if len(list) != 1 || list[0].CIDR != "10.0.47.64/26" || list[0].Type != "explicit" {
		t.Fatalf("reservations %+v, want one explicit 10.0.47.64/26", list)
	}
	if want := w.proofTags(ne, "10.0.47.64/26"); !maps.Equal(list[0].Tags, want) {
		t.Errorf("tags %v, want %v", list[0].Tags, want)
	}
	if got := testenv.GetNodeENI(t, w.k8s, ne.Name).Status.PodAddressReservations[0]; got.ID != list[0].ID || got.CIDR != "10.0.47.64/26" {
		t.Errorf("status %+v", got)
	}
	if n := w.Calls()["CreateSubnetCidrReservation"]; n != 1 {
		t.Errorf("%d CreateSubnetCidrReservation, want 1", n)
	}
	if err := w.k8s.Delete(context.Background(), ne); err != nil {
		t.Fatal(err)
	}
	w.eventually("the reservation deleted, then the NodeENI", func() (bool, string) {
		err := w.k8s.Get(context.Background(), client.ObjectKeyFromObject(ne), &v1alpha1.NodeENI{})
		return apierrors.IsNotFound(err) && len(w.reservations()) == 0, fmt.Sprint(err, w.reservations())
	})
}

// A reservation made just before a crash (proof in its tags, nothing in
// the status) is found and kept, not made again; a copy of its tags on a
// reservation of another range is distrusted, said in an event, and left
// alone even when the NodeENI goes.
func TestCrashLeftoverIsKeptAndACopyIsLeftAlone(t *testing.T) {
	w := newWorld(t)
	ne := w.nodeENI()
	ctx := context.Background()
	leftover, err := w.admin.CreateSubnetCIDRReservation(ctx, w.Subnets["multus-a"], "10.0.40.0/26", "", w.proofTags(ne, "10.0.40.0/26"))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := w.admin.CreateSubnetCIDRReservation(ctx, w.Subnets["multus-a"], "10.0.41.0/26", "", w.proofTags(ne, "10.0.40.0/26"))
	if err != nil {
		t.Fatal(err)
	}
	w.Emulator.ResetCounts()
	w.start()
	w.eventually("the leftover recorded", func() (bool, string) {
		got := testenv.GetNodeENI(t, w.k8s, ne.Name).Status.PodAddressReservations
		return len(got) == 1 && got[0].ID == leftover.ID, fmt.Sprintf("%+v", got)
	})
	w.eventually("the copy reported", func() (bool, string) {
		var list eventsv1.EventList
		_ = w.k8s.List(ctx, &list)
		for _, e := range list.Items {
			if e.Regarding.Name == ne.Name && e.Reason == podranges.ReasonUntrusted && strings.Contains(e.Note, copied.ID) {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(list.Items), " events")
	})
	if n := w.Calls()["CreateSubnetCidrReservation"]; n != 0 {
		t.Errorf("%d CreateSubnetCidrReservation after the crash, want 0", n)
	}
	if err := w.k8s.Delete(ctx, ne); err != nil {
		t.Fatal(err)
	}
	w.eventually("the NodeENI gone with its reservation", func() (bool, string) {
		err := w.k8s.Get(ctx, client.ObjectKeyFromObject(ne), &v1alpha1.NodeENI{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if list := w.reservations(); len(list) != 1 || list[0].ID != copied.ID {
		t.Errorf("reservations left %+v, want the copy alone", list)
	}
}
