package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

func TestMain(m *testing.M) {
	// TEST_LOG=1 shows the agent's logs.
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "\n"+strings.Repeat("!", 78)+
			"\n!!! internal/agent: NOT RUNNING AS ROOT: the node agent's network-namespace tests are SKIPPED.\n"+
			"!!! They create namespaces and links and need root: run `make test` as root.\n"+strings.Repeat("!", 78)+"\n")
	}
	testenv.Main(m, &shared)
}

// waitFor bounds every wait of the tests.
const waitFor = 15 * time.Second

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root. This test creates a network namespace and links in it; `make test` runs it as root.")
	}
}

// newNetNS creates a network namespace for the test. The namespace is
// entered on a thread of its own that is never given back to the Go
// scheduler (it ends with its goroutine), so no other goroutine ever
// runs in it and the test's own threads stay in the host's namespace.
func newNetNS(t *testing.T) netns.NsHandle {
	t.Helper()
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.New()
		ch <- result{ns, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("creating a network namespace: %v", r.err)
	}
	t.Cleanup(func() { _ = r.ns.Close() }) // the last handle: the namespace and its links go
	return r.ns
}

// world is one node of a test: a network namespace standing for the
// node's host, ENIs of an emulated instance whose MACs the test gives
// to links in it, and a client of the shared API server.
type world struct {
	t      *testing.T
	k8s    client.Client
	node   string
	prefix string // of the test's NodeENI and node names (the API server is shared)
	ns     netns.NsHandle
	nl     *netlink.Handle
	enis   []emulator.LoadedENI
	inst   string
	subnet string
	sg     string
	dir    string
	ec2    *testenv.EC2
}

// newWorld makes a node called <test>-<suffix> with n ENIs attached to
// its instance (device indexes 1..n) in subnet multus-a.
func newWorld(t *testing.T, suffix string, n int) *world {
	t.Helper()
	requireRoot(t)
	// A seed per node: two nodes of a test get distinct ENI IDs and MACs.
	var seed int64
	for _, c := range suffix {
		seed = seed*31 + int64(c)
	}
	spec := testenv.DefaultWorld(testenv.OnlySubnets("multus-a"))
	spec.Instances = []emulator.InstanceSpec{{Name: "node", Type: "m5.4xlarge", Subnet: "multus-a"}}
	for i := 1; i <= n; i++ {
		spec.NetworkInterfaces = append(spec.NetworkInterfaces, emulator.NetworkInterfaceSpec{Subnet: "multus-a", Instance: "node", DeviceIndex: i})
	}
	e := testenv.NewEC2(t, emulator.Options{Seed: seed}, spec)
	ns := newNetNS(t)
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	prefix := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	k8s := testenv.Client(t, shared.Env(t).Config)
	node := prefix + "-" + suffix
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})
	return &world{t: t, k8s: k8s, node: node, prefix: prefix, ns: ns, nl: nl,
		enis: e.World.NetworkInterfaces, inst: e.World.Instances[0].ID, subnet: e.Subnets["multus-a"], sg: e.Groups["multus"], dir: t.TempDir(), ec2: e}
}

func (w *world) mac(i int) string { return w.enis[i].MAC }

// attachment is the ENINode entry the operator writes for ENI i at
// index; setAttachments names its NodeENI.
func (w *world) attachment(i int, status string) v1alpha1.ENIAttachment {
	return v1alpha1.ENIAttachment{NodeID: w.node, InstanceID: w.inst, ENIID: w.enis[i].ID, SubnetID: w.subnet,
		MACAddress: w.enis[i].MAC, PrivateIP: w.enis[i].PrivateIP, DeviceIndex: int32(i + 1), Status: status}
}

func (w *world) name(s string) string { return w.prefix + "-" + s }

// createNodeENI creates a NodeENI and writes its attachments into the
// ENINodes of their nodes, as the operator does once it attached the ENIs.
func (w *world) createNodeENI(name string, mutate func(*v1alpha1.NodeENISpec), atts ...v1alpha1.ENIAttachment) {
	w.t.Helper()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"test": w.prefix}, SubnetID: w.subnet, SecurityGroupIDs: []string{w.sg}, DeviceIndex: 1}}
	if mutate != nil {
		mutate(&ne.Spec)
	}
	if err := w.k8s.Create(context.Background(), ne); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = w.k8s.Delete(context.Background(), ne) })
	w.setAttachments(name, atts...)
}

// operatorManager is the field manager the tests write a NodeENI's
// attachments with, one per NodeENI as the operator's.
func operatorManager(nodeENI string) string { return "eni-operator/" + nodeENI }

// setAttachments makes atts the whole of NodeENI name's attachments:
// each node's share is applied to its ENINode (created when missing),
// and nodes that held entries of name and have none now lose them.
func (w *world) setAttachments(name string, atts ...v1alpha1.ENIAttachment) {
	w.t.Helper()
	ctx := context.Background()
	byNode := map[string][]any{}
	list := &v1alpha1.ENINodeList{}
	if err := w.k8s.List(ctx, list); err != nil {
		w.t.Fatal(err)
	}
	for _, en := range list.Items {
		if slices.ContainsFunc(en.Spec.Attachments, func(a v1alpha1.ENIAttachment) bool { return a.NodeENI == name }) {
			byNode[en.Name] = []any{}
		}
	}
	for _, a := range atts {
		a.NodeENI, a.LastUpdated = name, metav1.Now()
		m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&a)
		if err != nil {
			w.t.Fatal(err)
		}
		byNode[a.NodeID] = append(byNode[a.NodeID], m)
	}
	for node, items := range byNode {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ENINode",
			"metadata": map[string]any{"name": node},
			"spec":     map[string]any{"attachments": items},
		}}
		if err := w.k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(operatorManager(name)), client.ForceOwnership); err != nil {
			w.t.Fatalf("writing NodeENI %s's attachments into ENINode %s: %v", name, node, err)
		}
	}
}

func (w *world) updateSpec(name string, f func(*v1alpha1.NodeENISpec)) {
	testenv.UpdateNodeENISpec(w.t, w.k8s, name, f)
}

func (w *world) deleteNodeENI(name string) {
	w.t.Helper()
	if err := w.k8s.Delete(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		w.t.Fatal(err)
	}
}

// eniNode reads this node's ENINode.
func (w *world) eniNode() *v1alpha1.ENINode {
	w.t.Helper()
	en := &v1alpha1.ENINode{}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Name: w.node}, en); err != nil {
		w.t.Fatalf("ENINode %s: %v", w.node, err)
	}
	return en
}

// entries returns the node's reported interfaces of the ENIs of NodeENI
// name, by ENI ID.
func (w *world) entries(name string) map[string]v1alpha1.InterfaceStatus {
	w.t.Helper()
	en := w.eniNode()
	out := map[string]v1alpha1.InterfaceStatus{}
	for _, s := range en.Status.Interfaces {
		if slices.ContainsFunc(en.Spec.Attachments, func(a v1alpha1.ENIAttachment) bool { return a.ENIID == s.ENIID && a.NodeENI == name }) {
			out[s.ENIID] = s
		}
	}
	return out
}

// addLink adds a link standing for an ENI's interface: a dummy, or, on
// kernels built without the dummy driver, one end of a veth pair (the
// peer, <name>p, gets a MAC of the kernel's).
func (w *world) addLink(name, mac string, mtu int) {
	w.t.Helper()
	if err := addLinkWith(w.nl, name, mac, mtu); err != nil {
		w.t.Fatal(err)
	}
}

func addLinkWith(h *netlink.Handle, name, mac string, mtu int) error {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return err
	}
	err = h.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw, MTU: mtu}})
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw, MTU: mtu}, PeerName: name + "p"})
	}
	if err != nil {
		return fmt.Errorf("adding link %s: %w", name, err)
	}
	return nil
}

func (w *world) addVeth(name, peer, mac string) {
	w.t.Helper()
	hw, err := net.ParseMAC(mac)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name, HardwareAddr: hw}, PeerName: peer}); err != nil {
		w.t.Fatalf("adding veth %s: %v", name, err)
	}
}

func (w *world) deleteLink(name string) {
	w.t.Helper()
	l, err := w.nl.LinkByName(name)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.nl.LinkDel(l); err != nil {
		w.t.Fatal(err)
	}
}

// links reads the namespace's links as the agent does.
func (w *world) links() []link {
	w.t.Helper()
	ls, err := host{h: w.nl}.links()
	if err != nil {
		w.t.Fatal(err)
	}
	return ls
}

func (w *world) linkByMAC(mac string) (link, bool) {
	l, found, _ := findLink(w.links(), mac)
	return l, found
}

func (w *world) linkByName(name string) (link, bool) {
	for _, l := range w.links() {
		if l.Name == name {
			return l, true
		}
	}
	return link{}, false
}

func (w *world) eventually(what string, cond func() (bool, string)) {
	w.t.Helper()
	testenv.Eventually(w.t, what, waitFor, cond)
}

// sriovConfig is the path of the node's SR-IOV device plugin config,
// written with content first unless content is empty.
func (w *world) sriovConfig(content string) string {
	p := filepath.Join(w.dir, "pcidp", "config.json")
	if content == "" {
		return p
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// options are the agent's options for this world; the state file lives
// in the world's directory, so a restarted agent finds it. The world's
// ENIs are dummy links (veth where the kernel has no dummy driver).
func (w *world) options() Options {
	return Options{StateFile: filepath.Join(w.dir, "state.json"), RetryBase: 100 * time.Millisecond, RetryMax: 2 * time.Second,
		linkKinds: []string{"device", "dummy", "veth"}}
}

// start runs an agent for this world's node in its namespace, connected
// with cfg (nil: as administrator).
func (w *world) start(o Options, cfg *rest.Config) *testenv.Manager {
	w.t.Helper()
	if cfg == nil {
		cfg = shared.Env(w.t).Config
	}
	return testenv.StartManager(w.t, cfg, ctrl.Options{
		Logger: log.Log.WithName(w.node),
		Cache:  CacheOptions(w.node),
	}, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		o.NodeName, o.Netlink, o.NetNS, o.Registerer = w.node, w.nl, &w.ns, reg
		return Setup(mgr, o)
	})
}

// interfacesGauge reads eni_agent_interfaces{state} of a running agent.
func interfacesGauge(t *testing.T, a *testenv.Manager, state string) float64 {
	t.Helper()
	return testenv.MetricValue(t, a.Registry, "eni_agent_interfaces", map[string]string{"state": state})
}
