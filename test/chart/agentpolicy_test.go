package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/agent"
)

const nodeNameExtra = "authentication.kubernetes.io/node-name"

var policyKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// The agents' admission policy, from the chart and from config/agent,
// installed in a real API server: an agent's ServiceAccount, with its
// token's node name node-a, writes node-a's status.interfaces entries
// (with the agent's own ApplyInterfaces) and nothing else: not node-b's
// entries, not status.attachments or conditions; without a node name
// it writes nothing.
func TestAgentAdmissionPolicy(t *testing.T) {
	c := newChart(t)
	t.Run("chart", func(t *testing.T) {
		objs := c.renderRelease(t, "vap", "agent.enabled=true")
		install(t, objs, policyKinds...)
		checkAgentPolicy(t, namespace, "vap-eni-operator-agent", "chart")
	})
	t.Run("config-agent", func(t *testing.T) {
		objs := kustomize(t, "agent")
		install(t, objs, policyKinds...)
		checkAgentPolicy(t, "eni-system", "eni-agent", "kustomize")
	})
}

func interfaceEntry(node, eni string, mtu int32) v1alpha1.InterfaceStatus {
	return v1alpha1.InterfaceStatus{NodeID: node, ENIID: eni, InterfaceName: "multus0", MTU: mtu, Up: true, State: v1alpha1.InterfaceConfigured,
		LastUpdated: metav1.NewTime(time.Now().Truncate(time.Second))}
}

func checkAgentPolicy(t *testing.T, ns, saName, prefix string) {
	ctx := context.Background()
	admin := adminClient(t)
	nodeA := serviceAccount(t, ns, saName, map[string][]string{nodeNameExtra: {"node-a"}})
	noNode := serviceAccount(t, ns, saName, nil)

	newNodeENI := func(name string) {
		t.Helper()
		ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
			NodeSelector: map[string]string{"ng": "multi-eni"}, SubnetID: "subnet-0123456789abcdef0",
			SecurityGroupIDs: []string{"sg-0123456789abcdef0"}, DeviceIndex: 2}}
		if err := admin.Create(ctx, ne); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, ne) })
		// The operator's part of the status and another node's report.
		ne.Status.Attachments = []v1alpha1.ENIAttachment{
			{NodeID: "node-a", InstanceID: "i-a", ENIID: "eni-a", SubnetID: "subnet-0123456789abcdef0", DeviceIndex: 2, Status: v1alpha1.AttachmentAttached},
			{NodeID: "node-b", InstanceID: "i-b", ENIID: "eni-b", SubnetID: "subnet-0123456789abcdef0", DeviceIndex: 2, Status: v1alpha1.AttachmentAttached}}
		ne.Status.Interfaces = []v1alpha1.InterfaceStatus{interfaceEntry("node-b", "eni-b", 1500)}
		meta.SetStatusCondition(&ne.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Attached", Message: "ok"})
		if err := admin.Status().Update(ctx, ne); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		refusedByPolicy(t, what, err)
	}

	// The policy reaches the admission plugin through an informer: wait
	// until it refuses, on an object of its own.
	probe := prefix + "-probe"
	newNodeENI(probe)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := agent.ApplyInterfaces(ctx, nodeA, "node-b", probe, []v1alpha1.InterfaceStatus{interfaceEntry("node-b", "eni-b", 9001)})
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatal("the admission policy never refused an agent writing another node's entry")
	}

	name := prefix + "-neni"
	newNodeENI(name)
	get := func() *v1alpha1.NodeENI {
		t.Helper()
		ne := &v1alpha1.NodeENI{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, ne); err != nil {
			t.Fatal(err)
		}
		return ne
	}
	entryOf := func(ne *v1alpha1.NodeENI, node string) *v1alpha1.InterfaceStatus {
		for i := range ne.Status.Interfaces {
			if ne.Status.Interfaces[i].NodeID == node {
				return &ne.Status.Interfaces[i]
			}
		}
		return nil
	}

	// Its own node: added, changed, removed.
	if err := agent.ApplyInterfaces(ctx, nodeA, "node-a", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 1500)}); err != nil {
		t.Fatalf("agent of node-a adding its entry: %v", err)
	}
	if err := agent.ApplyInterfaces(ctx, nodeA, "node-a", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 9001)}); err != nil {
		t.Fatalf("agent of node-a changing its entry: %v", err)
	}
	if e := entryOf(get(), "node-a"); e == nil || e.MTU != 9001 {
		t.Fatalf("node-a's entry %+v", e)
	}

	// The hostile agent of issue 25: 1,450 entries of about 1 KiB for its
	// own node would grow the object past what etcd takes and stall every
	// node's status. Only ENIs status.attachments lists for the node pass.
	flood := []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 9001)}
	for i := range 1450 {
		e := interfaceEntry("node-a", fmt.Sprintf("eni-%017x", i), 1500)
		e.State, e.Message = v1alpha1.InterfaceFailed, strings.Repeat("x", 1000)
		flood = append(flood, e)
	}
	refused("agent of node-a reporting 1,450 ENIs not attached to node-a", agent.ApplyInterfaces(ctx, nodeA, "node-a", name, flood))
	refused("agent of node-a reporting one ENI attached to node-b as its own",
		agent.ApplyInterfaces(ctx, nodeA, "node-a", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 9001), interfaceEntry("node-a", "eni-b", 1500)}))

	// Another node's entry: changed, added, removed.
	refused("agent of node-a changing node-b's entry (as node-b's field manager)",
		agent.ApplyInterfaces(ctx, nodeA, "node-b", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-b", "eni-b", 9001)}))
	refused("agent of node-a adding an entry for node-c",
		agent.ApplyInterfaces(ctx, nodeA, "node-a", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 9001), interfaceEntry("node-c", "eni-c", 1500)}))
	ne := get()
	old := ne.DeepCopy()
	ne.Status.Interfaces = []v1alpha1.InterfaceStatus{*entryOf(ne, "node-a")}
	refused("agent of node-a removing node-b's entry", nodeA.Status().Patch(ctx, ne, client.MergeFrom(old)))

	// Other status fields.
	ne = get()
	old = ne.DeepCopy()
	ne.Status.Attachments[1].Status = "detaching"
	refused("agent of node-a changing status.attachments", nodeA.Status().Patch(ctx, ne, client.MergeFrom(old)))
	ne = get()
	old = ne.DeepCopy()
	ne.Status.Conditions[0].Status = metav1.ConditionFalse
	refused("agent of node-a changing status.conditions", nodeA.Status().Patch(ctx, ne, client.MergeFrom(old)))
	ne = get()
	old = ne.DeepCopy()
	ne.Status.ReadyNodes = 7
	refused("agent of node-a changing status.readyNodes", nodeA.Status().Patch(ctx, ne, client.MergeFrom(old)))

	// A token without a node name (not bound to a pod on a node).
	refused("agent without a node name writing node-a's entry",
		agent.ApplyInterfaces(ctx, noNode, "node-a", name, []v1alpha1.InterfaceStatus{interfaceEntry("node-a", "eni-a", 1280)}))

	// Nothing refused got through; the agent may still prune its entry;
	// the operator (another user) is not restricted.
	ne = get()
	if e := entryOf(ne, "node-b"); e == nil || e.MTU != 1500 || len(ne.Status.Interfaces) != 2 || ne.Status.Attachments[1].Status != v1alpha1.AttachmentAttached || ne.Status.ReadyNodes != 0 {
		t.Errorf("a refused write changed the status: %+v", ne.Status)
	}
	if err := agent.ApplyInterfaces(ctx, nodeA, "node-a", name, nil); err != nil {
		t.Errorf("agent of node-a removing its entry: %v", err)
	}
	if e := entryOf(get(), "node-a"); e != nil {
		t.Errorf("node-a's entry not removed: %+v", e)
	}
	ne = get()
	old = ne.DeepCopy()
	ne.Status.Attachments[1].Status = "detaching"
	if err := admin.Status().Patch(ctx, ne, client.MergeFrom(old)); err != nil {
		t.Errorf("the operator's status write: %v", err)
	}
}

// config/agent's policy is the chart's, for the ServiceAccount
// eni-system/eni-agent.
func TestAgentPolicyInStep(t *testing.T) {
	c := newChart(t)
	chartObjs := c.renderRelease(t, "eni", "agent.enabled=true", "fullnameOverride=eni")
	cfgObjs := kustomize(t, "agent")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		a, b := find(t, chartObjs, kind, "eni-agent-own-node"), find(t, cfgObjs, kind, "eni-agent-own-node")
		spec, _, _ := unstructured.NestedMap(a.Object, "spec")
		want := strings.ReplaceAll(mustYAML(t, spec), "serviceaccount:"+namespace+":eni-agent", "serviceaccount:eni-system:eni-agent")
		got, _, _ := unstructured.NestedMap(b.Object, "spec")
		if mustYAML(t, got) != want || a.GetName() != b.GetName() {
			t.Errorf("config/agent's %s differs from the chart's:\n%s\nchart (for eni-system/eni-agent):\n%s", kind, mustYAML(t, got), want)
		}
	}
	if objs := c.renderRelease(t, "off"); has(objs, "DaemonSet") || slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ValidatingAdmissionPolicy" && strings.HasSuffix(o.GetName(), "-agent-own-node")
	}) {
		t.Error("the agent and its policy are rendered without agent.enabled")
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
