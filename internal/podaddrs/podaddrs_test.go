package podaddrs_test

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
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

const waitFor = 20 * time.Second

// world is one test's EC2 and cluster: a node on an instance of type
// small (4 IPv4 addresses per interface: the primary and three more; 2
// IPv6), a NodeENI registering pod addresses in subnet multus-a, or in
// the dual-stack subnet v6-a.
type world struct {
	*testenv.EC2
	t        *testing.T
	k8s      client.Client
	label    string
	instance string
	// spare is an instance without a node, for a test's second node.
	spare string
	ns    string
	// batch is the pass's BatchDelay: a pod change arriving within it of
	// the first joins that pass.
	batch time.Duration
	// inventory is how often the operator's picture of its ENIs is read
	// again (the NodeENI controller's resync).
	inventory time.Duration
	// clock times registration's backoffs (the real clock when nil).
	clock clock.PassiveClock
}

func newWorld(t *testing.T) *world {
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(testenv.OnlySubnets("nodes-a", "multus-a")))
	loaded := e.Load(t, emulator.World{
		InstanceTypes: []emulator.InstanceTypeSpec{{Name: "small.test", MaximumNetworkInterfaces: 3, IPv4AddressesPerInterface: 4, IPv6AddressesPerInterface: 2}},
		Subnets: []emulator.SubnetSpec{{Name: "v6-a", VPC: "main", CIDR: "10.0.96.0/20", IPv6CIDR: "2600:1f18:aa:100::/64",
			AvailabilityZone: "us-east-1a"}},
		Instances: []emulator.InstanceSpec{{Type: "small.test", Subnet: "nodes-a"}, {Type: "small.test", Subnet: "nodes-a"}},
	})
	w := &world{EC2: e, t: t, k8s: testenv.Client(t, shared.Env(t).Config), label: strings.ToLower(t.Name()), instance: loaded.Instances[0].ID,
		spare: loaded.Instances[1].ID, ns: strings.ToLower(t.Name()), batch: 300 * time.Millisecond, inventory: 300 * time.Millisecond}
	testenv.CreateNamespaces(t, w.k8s, w.ns)
	testenv.CreateNode(t, w.k8s, testenv.Node{Name: w.node(), Instance: w.instance, Zone: "us-east-1a", Labels: map[string]string{"test": w.label}})
	t.Cleanup(func() {
		ctx := context.Background()
		_ = w.k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(w.ns), client.GracePeriodSeconds(0))
		_ = w.k8s.Delete(ctx, &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.label}})
	})
	return w
}

func (w *world) node() string { return w.label + "-n0" }

// start runs the NodeENI controller and pod address registration, as
// the operator does, against the emulator.
func (w *world) start() *testenv.Manager { return w.startResync(time.Second) }

// startResync is start with the given resync of a node in sync.
func (w *world) startResync(resync time.Duration) *testenv.Manager {
	return w.run(func(mgr ctrl.Manager, state *ec2.State, reg *prometheus.Registry) error {
		return podaddrs.Setup(mgr, state, podaddrs.Options{BatchDelay: w.batch, StatusInterval: 200 * time.Millisecond, Resync: resync, StartCheck: 100 * time.Millisecond, Registerer: reg,
			InventoryScope: nodeeni.InventoryScope, Clock: w.clock})
	})
}

// startOff runs the NodeENI controller with registration off, as the
// operator does with --enable-multus-pod-addresses=false.
func (w *world) startOff() *testenv.Manager {
	return w.run(func(mgr ctrl.Manager, _ *ec2.State, _ *prometheus.Registry) error {
		return podaddrs.SetupOff(mgr, podaddrs.ReasonRegistrationDisabled, "turned off", 200*time.Millisecond)
	})
}

// run runs the NodeENI controller against the emulator, and what
// registration adds.
func (w *world) run(registration func(ctrl.Manager, *ec2.State, *prometheus.Registry) error) *testenv.Manager {
	return testenv.StartManager(w.t, shared.Env(w.t).Config, ctrl.Options{}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		cfg := testenv.FastEC2Config(w.VPC)
		cfg.Registerer = reg
		state := ec2.NewState(testenv.EC2Client(w.URL, cfg))
		if err := mgr.Add(state); err != nil {
			return err
		}
		if err := nodeeni.Setup(mgr, state, nodeeni.Options{ClusterName: "c-" + w.label, Keys: testenv.OwnershipKeys(), ResyncInterval: w.inventory,
			CatalogInterval: time.Minute, DetachPollInterval: 50 * time.Millisecond, CollectorGracePeriod: time.Second, Registerer: reg}); err != nil {
			return err
		}
		return registration(mgr, state, reg)
	})
}

// attached creates the NodeENI and returns its ENI once attached.
func (w *world) attached() awstypes.ENI { return w.attachedIn("multus-a") }

// attachedIn is attached with the NodeENI in subnet.
func (w *world) attachedIn(subnet string) awstypes.ENI {
	return w.attachedWith(subnet, &v1alpha1.MultusSpec{RegisterPodAddresses: true}, "")
}

// attachedWith is attached with the NodeENI in subnet, its multus
// section m and interface name iface.
func (w *world) attachedWith(subnet string, m *v1alpha1.MultusSpec, iface string) awstypes.ENI {
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.label}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"test": w.label}, SubnetName: subnet, SecurityGroupNames: []string{"multus"}, DeviceIndex: 1,
		InterfaceName: iface, Multus: m}}
	if err := w.k8s.Create(context.Background(), ne); err != nil {
		w.t.Fatal(err)
	}
	return w.attachedOn(w.node())
}

// attachedOn returns the NodeENI's ENI on node once attached.
func (w *world) attachedOn(node string) awstypes.ENI {
	var eni string
	w.eventually("the ENI attached on "+node, func() (bool, string) {
		en := w.eniNodeOf(node)
		for _, a := range en.Spec.Attachments {
			if a.Status == v1alpha1.AttachmentAttached {
				eni = a.ENIID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", en.Spec.Attachments)
	})
	return w.ENI(w.t, eni)
}

func (w *world) eniNode() *v1alpha1.ENINode { return w.eniNodeOf(w.node()) }

func (w *world) eniNodeOf(node string) *v1alpha1.ENINode {
	en := &v1alpha1.ENINode{}
	_ = w.k8s.Get(context.Background(), client.ObjectKey{Name: node}, en)
	return en
}

func (w *world) eventually(what string, cond func() (bool, string)) {
	w.t.Helper()
	testenv.Eventually(w.t, what, waitFor, cond)
}

// multusPod creates a pod on the node whose network status names mac
// with addresses, as Multus writes it.
func (w *world) multusPod(name, mac string, addrs ...string) {
	w.multusPodOn(w.node(), name, mac, addrs...)
}

// multusPodOn is multusPod on node.
func (w *world) multusPodOn(node, name, mac string, addrs ...string) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Annotations: map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus(mac, addrs...)}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "cnf"}}}}
	testenv.CreatePod(w.t, w.k8s, p, testenv.Running("10.0.128.9"))
}

// networkStatus is the network status Multus writes for a pod with a
// secondary interface of MAC mac and addresses addrs.
func (w *world) networkStatus(mac string, addrs ...string) string {
	quoted := make([]string, len(addrs))
	for i, a := range addrs {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`[{"name":"aws-cni","interface":"eth0","ips":["10.0.128.9"],"mac":"0a:00:00:00:00:01","default":true},`+
		`{"name":"%s/multus","interface":"net1","ips":[%s],"mac":"%s"}]`, w.ns, strings.Join(quoted, ","), mac)
}

// gated is a pod on the node that names the readiness gate.
func (w *world) gated(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: corev1.PodSpec{NodeName: w.node(), Containers: []corev1.Container{{Name: "c", Image: "cnf"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: podaddrs.GateCondition}}}}
}

// readyContainers is the status of a running pod whose containers are
// ready: the kubelet's part of Ready.
func readyContainers() corev1.PodStatus {
	status := testenv.Running("10.0.128.9")
	status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	return status
}

// gateIs waits for a pod's readiness gate condition to be want, for reason.
func (w *world) gateIs(pod string, want corev1.ConditionStatus, reason string) {
	w.t.Helper()
	w.eventually(pod+"'s gate "+string(want)+" "+reason, func() (bool, string) {
		c := w.gateOf(pod)
		return c != nil && c.Status == want && c.Reason == reason, fmt.Sprintf("%+v", c)
	})
}

// gateOf returns a pod's readiness gate condition, if any.
func (w *world) gateOf(name string) *corev1.PodCondition {
	p := &corev1.Pod{}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, p); err != nil {
		w.t.Fatal(err)
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == podaddrs.GateCondition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func (w *world) deletePod(name string) {
	if err := w.k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns}}, client.GracePeriodSeconds(0)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) secondaries(eni string) []string {
	out := slices.Clone(w.ENI(w.t, eni).SecondaryIPs)
	slices.Sort(out)
	return out
}

func (w *world) condition() *metav1.Condition {
	ne := testenv.GetNodeENI(w.t, w.k8s, w.label)
	for i := range ne.Status.Conditions {
		if ne.Status.Conditions[i].Type == v1alpha1.ConditionPodAddressesRegistered {
			return &ne.Status.Conditions[i]
		}
	}
	return nil
}

// A burst of Multus pods is registered with one call on the ENI whose MAC
// their network status names; a pod's address goes with it, an address
// someone else assigned stays, and a restart in sync makes no EC2 write.
func TestRegisterAndRelease(t *testing.T) {
	w := newWorld(t)
	// Two pods made one after the other are one burst only if no other
	// pass runs between them: the pass that follows the attachment (it
	// waits for the inventory to show the ENI) must be over, no resync may
	// fall between them, and both must arrive within the batch delay.
	w.batch = 2 * time.Second
	m := w.startResync(time.Minute)
	eni := w.attached()
	mac := strings.ToUpper(eni.MAC) // Multus may report either case
	w.eventually("the pass after the attachment", func() (bool, string) {
		c := w.condition()
		return c != nil && strings.Contains(c.Message, "registered: 0,"), fmt.Sprintf("%+v", c)
	})
	w.Emulator.ResetCounts()

	w.multusPod("p1", mac, "10.0.32.101")
	w.multusPod("p2", mac, "10.0.32.102")
	w.eventually("both addresses on the ENI", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return slices.Equal(got, []string{"10.0.32.101", "10.0.32.102"}), fmt.Sprint(got)
	})
	if n := w.Calls()["AssignPrivateIpAddresses"]; n != 1 {
		var calls []string
		for _, c := range w.Emulator.Calls() {
			if c.Action == "AssignPrivateIpAddresses" {
				calls = append(calls, fmt.Sprintf("%s %v %s", c.Time.Format(time.StampMicro), c.Params, c.Code))
			}
		}
		t.Errorf("%d AssignPrivateIpAddresses for a burst of two pods on one ENI, want 1:\n%s", n, strings.Join(calls, "\n"))
	}
	rec := w.eniNode().Spec.PodAddresses
	if len(rec) != 2 || rec[0].ENIID != eni.ID || rec[0].Pod != w.ns+"/p1" {
		t.Errorf("record %+v", rec)
	}
	w.eventually("condition True", func() (bool, string) {
		c := w.condition()
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "registered: 2,"), fmt.Sprintf("%+v", c)
	})
	if v := testenv.MetricValue(t, m.Registry, "eni_operator_pod_addresses", map[string]string{"nodeeni": w.label, "state": "registered"}); v != 2 {
		t.Errorf("eni_operator_pod_addresses registered %v, want 2", v)
	}

	// Someone else's address on the ENI: never the operator's to remove.
	admin := w.Client(ec2.Config{VPCID: w.VPC})
	if err := admin.AssignAddresses(context.Background(), eni.ID, ec2.Addresses{IPv4: []string{"10.0.32.200"}}); err != nil {
		t.Fatal(err)
	}
	w.deletePod("p1")
	w.eventually("p1's address unassigned, the others kept", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return slices.Equal(got, []string{"10.0.32.102", "10.0.32.200"}), fmt.Sprint(got)
	})
	w.eventually("the record forgets it", func() (bool, string) {
		rec := w.eniNode().Spec.PodAddresses
		return len(rec) == 1 && rec[0].Address == "10.0.32.102", fmt.Sprint(rec)
	})

	// A restart in sync: no EC2 write.
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	w.Emulator.ResetCounts()
	w.start()
	time.Sleep(3 * time.Second)
	for action, n := range w.Calls() {
		if !strings.HasPrefix(action, "Describe") {
			t.Errorf("%d %s after a restart in sync", n, action)
		}
	}
}

// Addresses beyond the instance type's limit, outside the subnet or held
// by another ENI are refused, each said on its pod and in the condition,
// and do not stop the others.
func TestRefusals(t *testing.T) {
	w := newWorld(t)
	w.start()
	eni := w.attached()
	w.multusPod("a", eni.MAC, "10.0.32.101", "10.0.32.102")
	w.multusPod("b", eni.MAC, "10.0.32.103", "10.0.32.104") // the 4th secondary is one too many
	w.multusPod("c", eni.MAC, "10.0.99.1")                  // not in multus-a
	w.eventually("three addresses on the ENI", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return len(got) == 3, fmt.Sprint(got)
	})
	w.eventually("the condition says why", func() (bool, string) {
		c := w.condition()
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "not registered: 2 "), fmt.Sprintf("%+v", c)
	})
	w.eventually("events on the pods", func() (bool, string) {
		var list eventsv1.EventList
		_ = w.k8s.List(context.Background(), &list, client.InNamespace(w.ns))
		reasons := map[string]string{}
		for _, e := range list.Items {
			reasons[e.Regarding.Name] = e.Reason
		}
		return reasons["b"] == podaddrs.ReasonAddressLimit && reasons["c"] == podaddrs.ReasonNotInSubnet, fmt.Sprint(reasons)
	})
	// The limit freed: b's second address is registered.
	w.deletePod("a")
	w.eventually("b registered in full", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return slices.Equal(got, []string{"10.0.32.103", "10.0.32.104"}), fmt.Sprint(got)
	})
}

// A pod naming the readiness gate is held unready until Multus has
// written its network status and its address is on the ENI in EC2; a
// refused address keeps it unready with the refusal's reason. The
// kubelet's conditions stay as they are.
func TestReadinessGate(t *testing.T) {
	w := newWorld(t)
	w.start()
	eni := w.attached()
	status := readyContainers()
	testenv.CreatePod(t, w.k8s, w.gated("app"), status)
	bad := w.gated("bad")
	bad.Annotations = map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus(eni.MAC, "10.0.99.1")}
	testenv.CreatePod(t, w.k8s, bad, status)
	w.gateIs("app", corev1.ConditionFalse, podaddrs.ReasonPending)
	w.gateIs("bad", corev1.ConditionFalse, podaddrs.ReasonNotInSubnet)
	// On a node no NodeENI selects (no ENINode): said too.
	bare := w.label + "-bare"
	testenv.CreateNode(t, w.k8s, testenv.Node{Name: bare, Instance: w.spare, Zone: "us-east-1a"})
	elsewhere := w.gated("elsewhere")
	elsewhere.Spec.NodeName = bare
	elsewhere.Annotations = map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus("02:00:00:00:00:99", "10.0.32.150")}
	testenv.CreatePod(t, w.k8s, elsewhere, status)
	w.gateIs("elsewhere", corev1.ConditionFalse, podaddrs.ReasonNoInterface)

	// Multus writes the network status: the address is assigned, then
	// the gate opens.
	p := &corev1.Pod{}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "app"}, p); err != nil {
		t.Fatal(err)
	}
	old := p.DeepCopy()
	p.Annotations = map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus(eni.MAC, "10.0.32.101")}
	if err := w.k8s.Patch(context.Background(), p, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	w.gateIs("app", corev1.ConditionTrue, podaddrs.ReasonRegistered)
	if got := w.secondaries(eni.ID); !slices.Equal(got, []string{"10.0.32.101"}) {
		t.Errorf("the gate opened with the ENI holding %v", got)
	}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: "app"}, p); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue
	}) {
		t.Errorf("the kubelet's condition is gone: %+v", p.Status.Conditions)
	}
}

// A NodeENI with attachment definitions but no registration still
// answers the gate of its pods, which would otherwise stay unready
// without a word; it costs no address call and no instance lookup.
func TestGateWithoutRegistration(t *testing.T) {
	w := newWorld(t)
	w.start()
	eni := w.attachedWith("multus-a", &v1alpha1.MultusSpec{AttachmentDefinition: &v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{w.ns}}}, "data")
	w.Emulator.ResetCounts()
	p := w.gated("app")
	p.Annotations = map[string]string{podaddrs.NetworkStatusAnnotation: w.networkStatus(eni.MAC, "10.0.32.101")}
	testenv.CreatePod(t, w.k8s, p, readyContainers())
	w.gateIs("app", corev1.ConditionFalse, podaddrs.ReasonNoInterface)
	if got := w.secondaries(eni.ID); len(got) != 0 {
		t.Errorf("the ENI of a NodeENI that does not register holds %v", got)
	}
	for action, n := range w.Calls() {
		if action != "DescribeNetworkInterfaces" {
			t.Errorf("%d %s for a pod on a NodeENI that does not register", n, action)
		}
	}
}

// An operator that does not register says so on each NodeENI that asks
// for it, and takes the word back when the NodeENI no longer asks; it
// touches no address.
func TestRegistrationOff(t *testing.T) {
	w := newWorld(t)
	w.startOff()
	eni := w.attached()
	w.multusPod("p1", eni.MAC, "10.0.32.101")
	w.eventually("the condition says registration is off", func() (bool, string) {
		c := w.condition()
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == podaddrs.ReasonRegistrationDisabled && c.Message == "turned off", fmt.Sprintf("%+v", c)
	})
	ne := testenv.GetNodeENI(t, w.k8s, w.label)
	old := ne.DeepCopy()
	ne.Spec.Multus.RegisterPodAddresses = false
	if err := w.k8s.Patch(context.Background(), ne, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	w.eventually("the condition gone", func() (bool, string) {
		c := w.condition()
		return c == nil, fmt.Sprintf("%+v", c)
	})
	if got := w.secondaries(eni.ID); len(got) != 0 {
		t.Errorf("registration off, the ENI holds %v", got)
	}
}

// An address a pod takes over from a pod going on another node (an IPAM
// such as whereabouts hands a freed address out again) moves to the new
// pod's ENI once the other node's pass unassigns it, though the new
// pod's node was refused it first: not a resync (here a minute) later.
func TestAddressMovesToAnotherNode(t *testing.T) {
	w := newWorld(t)
	other := w.label + "-n1"
	testenv.CreateNode(t, w.k8s, testenv.Node{Name: other, Instance: w.spare, Zone: "us-east-1a", Labels: map[string]string{"test": w.label}})
	w.startResync(time.Minute)
	eni0 := w.attached()
	eni1 := w.attachedOn(other)
	w.multusPod("old", eni0.MAC, "10.0.32.101")
	w.eventually("the address on the first node's ENI", func() (bool, string) {
		got := w.secondaries(eni0.ID)
		return slices.Equal(got, []string{"10.0.32.101"}), fmt.Sprint(got)
	})
	w.multusPodOn(other, "new", eni1.MAC, "10.0.32.101")
	w.eventually("the new pod refused while the old one holds it", func() (bool, string) {
		var list eventsv1.EventList
		_ = w.k8s.List(context.Background(), &list, client.InNamespace(w.ns))
		for _, e := range list.Items {
			if e.Regarding.Name == "new" && e.Reason == podaddrs.ReasonAddressTaken {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(list.Items), " events")
	})
	w.deletePod("old")
	w.eventually("the address moved to the second node's ENI", func() (bool, string) {
		got0, got1 := w.secondaries(eni0.ID), w.secondaries(eni1.ID)
		return len(got0) == 0 && slices.Equal(got1, []string{"10.0.32.101"}), fmt.Sprint(got0, got1)
	})
	if rec := w.eniNodeOf(other).Spec.PodAddresses; len(rec) != 1 || rec[0].ENIID != eni1.ID || rec[0].Pod != w.ns+"/new" {
		t.Errorf("second node's record %+v", rec)
	}
}

// After a restart, a node's pass waits for the first inventory of the
// NodeENIs' ENIs: a pass before it would see no ENI of the node, do
// nothing and look again only a resync later, so a pod created while the
// operator was down would wait that long for its address.
func TestRestartWaitsForInventory(t *testing.T) {
	w := newWorld(t)
	m := w.startResync(time.Minute)
	eni := w.attached()
	w.multusPod("p1", eni.MAC, "10.0.32.101")
	w.eventually("p1's address on the ENI", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return slices.Equal(got, []string{"10.0.32.101"}), fmt.Sprint(got)
	})
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	w.multusPod("p2", eni.MAC, "10.0.32.102") // while the operator is down
	// The first inventory takes 3 s: the pods' and ENINodes' caches are
	// ready long before.
	slow := map[string]emulator.Fault{"DescribeNetworkInterfaces": {Latency: emulator.Duration{Duration: 3 * time.Second}}}
	if err := w.Emulator.Configure(emulator.Config{Faults: slow}); err != nil {
		t.Fatal(err)
	}
	w.startResync(time.Minute)
	time.Sleep(4 * time.Second)
	if err := w.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{}}); err != nil {
		t.Fatal(err)
	}
	w.eventually("p2's address registered without waiting for a resync", func() (bool, string) {
		got := w.secondaries(eni.ID)
		return slices.Equal(got, []string{"10.0.32.101", "10.0.32.102"}), fmt.Sprint(got)
	})
	w.eventually("the condition counts both", func() (bool, string) {
		c := w.condition()
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "registered: 2,"), fmt.Sprintf("%+v", c)
	})
}

// A pod with an IPv4 and an IPv6 address on a dual-stack subnet's ENI
// gets both, one call per family; the IPv6 address goes with the pod.
func TestDualStack(t *testing.T) {
	w := newWorld(t)
	m := w.startResync(time.Minute)
	eni := w.attachedIn("v6-a")
	w.Emulator.ResetCounts()
	w.multusPod("p1", eni.MAC, "10.0.96.50", "2600:1f18:aa:100::50")
	w.eventually("both addresses on the ENI", func() (bool, string) {
		e := w.ENI(t, eni.ID)
		return slices.Contains(e.SecondaryIPs, "10.0.96.50") && slices.Contains(e.IPv6Addresses, "2600:1f18:aa:100::50"), fmt.Sprint(e.SecondaryIPs, e.IPv6Addresses)
	})
	if c := w.Calls(); c["AssignPrivateIpAddresses"] != 1 || c["AssignIpv6Addresses"] != 1 {
		t.Errorf("calls %v; want one assign per family", c)
	}
	w.deletePod("p1")
	w.eventually("both unassigned", func() (bool, string) {
		e := w.ENI(t, eni.ID)
		return len(e.SecondaryIPs) == 0 && len(e.IPv6Addresses) == 0, fmt.Sprint(e.SecondaryIPs, e.IPv6Addresses)
	})
	if c := w.Calls(); c["UnassignIpv6Addresses"] != 1 {
		t.Errorf("calls %v; want one IPv6 unassign", c)
	}
	// The NodeENI deleted: its series go with it.
	if err := w.k8s.Delete(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.label}}); err != nil {
		t.Fatal(err)
	}
	w.eventually("the deleted NodeENI's series gone", func() (bool, string) {
		n := len(testenv.MetricSeries(t, m.Registry, "eni_operator_pod_addresses", map[string]string{"nodeeni": w.label}))
		return n == 0, fmt.Sprint(n, " series")
	})
}
