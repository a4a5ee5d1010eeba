package nodeeni_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

// TEST_LOG=1 shows the operator's logs.
func TestMain(m *testing.M) { testenv.Main(m, &shared) }

// Intervals of the tests: short, so a whole scenario takes seconds.
const (
	resync      = 300 * time.Millisecond
	detachDelay = 100 * time.Millisecond
	waitFor     = 20 * time.Second
)

// harness is one test's world: an emulator with a VPC, the test's own
// cluster name and label, and a client of the shared API server.
type harness struct {
	*testenv.EC2
	t       *testing.T
	loaded  emulator.LoadResult // of the test's extra world
	k8s     client.Client
	cluster string
	label   string // every node and NodeENI selector of the test carries label=<test>
	// cfg is what the operator's manager connects with (default: admin).
	cfg *rest.Config
	// clock, set by startStepped, is the operator's: its inventory
	// refreshes only when passes steps it.
	clock *clocktesting.FakeClock
	// stepped is the manager startStepped started.
	stepped *testenv.Manager
}

// newHarness loads the default world's nodes, multus and storage-a
// subnets, security groups multus and storage, and a second VPC whose
// names must never be resolved; then extra.
func newHarness(t *testing.T, extra emulator.World) *harness {
	t.Helper()
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: detachDelay}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "nodes-b", "multus-a", "multus-b", "storage-a"),
		testenv.WithSecurityGroups("storage"), testenv.WithOtherVPC()))
	h := &harness{EC2: e, t: t, loaded: e.Load(t, extra), k8s: testenv.Client(t, shared.Env(t).Config),
		cluster: "c-" + strings.ToLower(t.Name()), label: strings.ToLower(t.Name())}
	t.Cleanup(h.cleanupKube)
	e.Emulator.ResetCounts()
	return h
}

// ec2Config is the operator's EC2 client configuration here
// (testenv.FastEC2Config; startWith sets the VPC).
func ec2Config() ec2.Config { return testenv.FastEC2Config("") }

// ec2Client is a client of the test's own for reading the emulator.
func (h *harness) ec2Client() *ec2.Client { return h.Client(ec2Config()) }

func (h *harness) options() nodeeni.Options {
	return nodeeni.Options{
		ClusterName: h.cluster, Keys: testenv.OwnershipKeys(), ResyncInterval: resync, CatalogInterval: time.Minute, MinCatalogRefresh: 200 * time.Millisecond,
		DetachPollInterval: 50 * time.Millisecond, CollectorGracePeriod: time.Second, MaxConcurrentReconciles: 2,
	}
}

// start runs the operator's NodeENI controller, inventory and collector
// in a real controller-runtime manager against the emulator.
func (h *harness) start(o nodeeni.Options) *testenv.Manager {
	return h.startWith(o, h.URL, ec2Config(), ctrl.Options{})
}

// startStepped runs the operator as start does, on a fake clock: after
// the first inventory read, the inventory is read again, and the
// collector's grace period passes, only when the test calls steps.
func (h *harness) startStepped(o nodeeni.Options) *testenv.Manager {
	h.clock = clocktesting.NewFakeClock(time.Now())
	c := ec2Config()
	c.Clock, o.Clock = h.clock, h.clock
	h.stepped = h.startWith(o, h.URL, c, ctrl.Options{})
	return h.stepped
}

// steps steps the clock of startStepped through n resync intervals. After
// each it waits for the inventory refresh that step brings and for the
// collector's pass over it, so a test sees n refreshes and n passes, not
// whatever a fixed sleep allowed on a loaded machine.
func (h *harness) steps(n int) {
	h.t.Helper()
	count := func() float64 {
		return testenv.MetricValue(h.t, h.stepped.Registry, "eni_operator_nodeeni_collector_passes_total", nil)
	}
	for i := range n {
		before := count()
		h.eventually("the inventory waits for its next refresh", waitFor, func() (bool, string) { return h.clock.HasWaiters(), "" })
		h.clock.Step(resync)
		h.eventually(fmt.Sprintf("pass %d of %d", i+1, n), waitFor, func() (bool, string) {
			return count() > before, fmt.Sprintf("%v collector passes", count())
		})
	}
}

// eventuallySteps is eventually for a test on startStepped's clock: it
// checks cond after each resync interval it steps through (steps), up to
// maxSteps, and fails with cond's last word if it never holds. What
// waits on the inventory's next read sees it as soon as the test asks,
// however loaded the machine.
func (h *harness) eventuallySteps(what string, maxSteps int, cond func() (bool, string)) {
	h.t.Helper()
	var last string
	for i := 0; i <= maxSteps; i++ {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if i < maxSteps {
			h.steps(1)
		}
	}
	h.t.Fatalf("%s: not after %d resync intervals: %s", what, maxSteps, last)
}

// startWith is the one place these tests build the operator's EC2
// client and manager: the client of c against endpoint, its health the
// manager's readiness check and its metrics in the manager's registry,
// as the operator registers them.
func (h *harness) startWith(o nodeeni.Options, endpoint string, c ec2.Config, mo ctrl.Options) *testenv.Manager {
	h.t.Helper()
	cfg := h.cfg
	if cfg == nil {
		cfg = shared.Env(h.t).Config
	}
	mo.Logger = log.Log.WithName(h.label)
	return testenv.StartManager(h.t, cfg, mo, func(mgr ctrl.Manager, reg *prometheus.Registry) error {
		c.VPCID, c.Registerer, o.Registerer = h.VPC, reg, reg
		ec2c := testenv.EC2Client(endpoint, c)
		if err := mgr.AddReadyzCheck("ec2", ec2c.Health().Check); err != nil {
			return err
		}
		state := ec2.NewState(ec2c)
		if err := mgr.Add(state); err != nil {
			return err
		}
		return nodeeni.Setup(mgr, state, o)
	})
}

func (h *harness) instance(i int) string { return h.loaded.Instances[i].ID }

// addNode creates a Node for an emulator instance, in a zone, with the
// test's label and more.
func (h *harness) addNode(name, instance, zone string, labels map[string]string) {
	h.t.Helper()
	all := map[string]string{"test": h.label}
	for k, v := range labels {
		all[k] = v
	}
	testenv.CreateNode(h.t, h.k8s, testenv.Node{Name: name, Instance: instance, Zone: zone, Labels: all})
}

// nodesHarness is a harness on n m5.xlarge instances in subnet nodes-a,
// each one a Node in us-east-1a labelled ng=group; it returns the node
// names too: n0, n1, … zero-padded to one width (n00 … n19 for 20), so
// that no name is a prefix of another.
func nodesHarness(t *testing.T, n int, group string) (*harness, []string) {
	var w emulator.World
	for range n {
		w.Instances = append(w.Instances, emulator.InstanceSpec{Type: "m5.xlarge", Subnet: "nodes-a"})
	}
	h := newHarness(t, w)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%0*d", len(fmt.Sprint(n-1)), i)
		h.addNode(names[i], h.instance(i), "us-east-1a", map[string]string{"ng": group})
	}
	return h, names
}

// waitReplaced waits until EC2 holds n ENIs, none of them one of old
// (those are deleted), each attached at index.
func (h *harness) waitReplaced(n, index int, old []string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("ENIs replaced at index %d, old ones deleted", index), waitFor, func() (bool, string) {
		list := h.enis()
		if len(list) != n {
			return false, fmt.Sprintf("%d ENIs", len(list))
		}
		for _, e := range list {
			if slices.Contains(old, e.ID) || e.Attachment == nil || e.Attachment.DeviceIndex != index || e.Attachment.Status != "attached" {
				return false, fmt.Sprintf("%s attachment %+v", e.ID, e.Attachment)
			}
		}
		return true, ""
	})
}

// spec returns a NodeENI spec selecting the test's nodes.
func (h *harness) spec(extra map[string]string) v1alpha1.NodeENISpec {
	sel := map[string]string{"test": h.label}
	for k, v := range extra {
		sel[k] = v
	}
	return v1alpha1.NodeENISpec{NodeSelector: sel, DeviceIndex: 1}
}

// multusSpec is spec in subnet multus-a and security group multus.
func (h *harness) multusSpec(extra map[string]string) v1alpha1.NodeENISpec {
	s := h.spec(extra)
	s.SubnetName, s.SecurityGroupNames = "multus-a", []string{"multus"}
	return s
}

func (h *harness) createNodeENI(name string, spec v1alpha1.NodeENISpec) *v1alpha1.NodeENI {
	h.t.Helper()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := h.k8s.Create(context.Background(), ne); err != nil {
		h.t.Fatal(err)
	}
	return ne
}

func (h *harness) get(name string) *v1alpha1.NodeENI { return testenv.GetNodeENI(h.t, h.k8s, name) }

// eniNodeVersions are the resource versions of the ENINodes of the
// test's nodes, by name.
func (h *harness) eniNodeVersions() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	for _, en := range h.eniNodes() {
		out[en.Name] = en.ResourceVersion
	}
	return out
}

// eniNodes are the ENINodes of the test's nodes.
func (h *harness) eniNodes() []v1alpha1.ENINode {
	h.t.Helper()
	list := &v1alpha1.ENINodeList{}
	if err := h.k8s.List(context.Background(), list); err != nil {
		h.t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := h.k8s.List(context.Background(), nodes, client.MatchingLabels{"test": h.label}); err != nil {
		h.t.Fatal(err)
	}
	var out []v1alpha1.ENINode
	for _, en := range list.Items {
		if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.Name == en.Name }) {
			out = append(out, en)
		}
	}
	return out
}

// attachments are a NodeENI's entries in the ENINodes.
func (h *harness) attachments(name string) []v1alpha1.ENIAttachment {
	return testenv.Attachments(h.t, h.k8s, name)
}

// update changes a NodeENI's spec, retrying on conflicts.
func (h *harness) update(name string, f func(*v1alpha1.NodeENISpec)) {
	testenv.UpdateNodeENISpec(h.t, h.k8s, name, f)
}

func (h *harness) eventually(what string, timeout time.Duration, cond func() (bool, string)) {
	h.t.Helper()
	testenv.Eventually(h.t, what, timeout, cond)
}

// enis lists the cluster's ENIs straight from the emulator (EC2 calls of
// the test's own, outside any measured window).
func (h *harness) enis() []awstypes.ENI {
	h.t.Helper()
	list, err := h.ec2Client().ListENIs(context.Background(), ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{h.cluster}})
	if err != nil {
		h.t.Fatal(err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// ready waits until a NodeENI reports all its desired nodes ready and
// nothing in progress.
func (h *harness) ready(name string, nodes int) *v1alpha1.NodeENI {
	h.t.Helper()
	var ne *v1alpha1.NodeENI
	h.eventually(name+" ready", waitFor, func() (bool, string) {
		ne = h.get(name)
		if ne == nil {
			return false, "missing"
		}
		c := condition(ne, v1alpha1.ConditionReady)
		p := condition(ne, v1alpha1.ConditionProgressing)
		ok := c != nil && c.Status == metav1.ConditionTrue && c.Reason == eniplan.ReasonAttached && p != nil && p.Status == metav1.ConditionFalse &&
			int(ne.Status.ReadyNodes) == nodes && int(ne.Status.DesiredNodes) == nodes && ne.Status.ObservedGeneration == ne.Generation
		return ok, fmt.Sprintf("status %+v", ne.Status)
	})
	return ne
}

func condition(ne *v1alpha1.NodeENI, t string) *metav1.Condition {
	return meta.FindStatusCondition(ne.Status.Conditions, t)
}

// calls returns the emulator's call count of an action.
func (h *harness) calls(action string) int { return h.Calls()[action] }

func (h *harness) totalCalls() (int, map[string]int) { return h.TotalCalls(), h.Calls() }

// cleanupKube removes the test's NodeENIs (finalizers dropped: the
// test's manager is stopped by then) and nodes from the shared API server.
func (h *harness) cleanupKube() {
	ctx := context.Background()
	list := &v1alpha1.NodeENIList{}
	_ = h.k8s.List(ctx, list)
	for i := range list.Items {
		ne := &list.Items[i]
		if ne.Spec.NodeSelector["test"] != h.label {
			continue
		}
		if len(ne.Finalizers) > 0 {
			ne.Finalizers = nil
			_ = h.k8s.Update(ctx, ne)
		}
		_ = h.k8s.Delete(ctx, ne)
	}
	// No garbage collector runs here to delete the nodes' ENINodes.
	nodes := &corev1.NodeList{}
	_ = h.k8s.List(ctx, nodes, client.MatchingLabels{"test": h.label})
	for _, n := range nodes.Items {
		_ = h.k8s.Delete(ctx, &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
	}
	_ = h.k8s.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{"test": h.label})
}

// deleteNodeENI deletes a NodeENI and waits until it is gone (the
// finalizer released by the controller).
func (h *harness) deleteNodeENI(name string) {
	h.t.Helper()
	if err := h.k8s.Delete(context.Background(), &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		h.t.Fatal(err)
	}
	h.eventually(name+" deleted", waitFor, func() (bool, string) {
		ne := h.get(name)
		if ne == nil {
			return true, ""
		}
		return false, fmt.Sprintf("finalizers %v status %+v", ne.Finalizers, ne.Status)
	})
}

// proven gives an ENI a test loads into the emulator an ID and the
// ownership proof the operator would have written on it.
func proven(s emulator.NetworkInterfaceSpec) emulator.NetworkInterfaceSpec {
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	s.ID = "eni-" + hex.EncodeToString(b)[:17]
	s.Tags = maps.Clone(s.Tags)
	maps.Copy(s.Tags, eniplan.ProofTag(testenv.OwnershipKeys(), awstypes.ENI{ID: s.ID, Tags: s.Tags}))
	return s
}

// prove writes the ownership proof on an ENI a test tagged as the
// operator would have, and resets the call counts.
func (h *harness) prove(id string) {
	h.t.Helper()
	c := h.ec2Client()
	e, err := c.GetENI(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := c.CreateTags(context.Background(), id, eniplan.ProofTag(testenv.OwnershipKeys(), e)); err != nil {
		h.t.Fatal(err)
	}
	h.Emulator.ResetCounts()
}

// onlyReads checks that no call since the counts were last reset, but
// the describes, names one of ids.
func (h *harness) onlyReads(ids ...string) {
	h.t.Helper()
	for _, c := range h.Emulator.Calls() {
		if c.Action == "DescribeNetworkInterfaces" || c.Action == "DescribeInstances" {
			continue
		}
		for _, vs := range c.Params {
			for _, v := range vs {
				if slices.Contains(ids, v) {
					h.t.Errorf("%s names %s: %v", c.Action, v, c.Params)
				}
			}
		}
	}
}
