package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// token's node name, writes its own node's ENINode status (with the
// agent's own ApplyInterfaces) and nothing else: not another node's
// ENINode, not ENIs its spec does not list, not the spec or metadata,
// even where RBAC would allow it; without a node name it writes nothing.
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

func interfaceEntry(eni string, mtu int32) v1alpha1.InterfaceStatus {
	return v1alpha1.InterfaceStatus{ENIID: eni, InterfaceName: "multus0", MTU: mtu, Up: true, State: v1alpha1.InterfaceConfigured,
		LastUpdated: metav1.NewTime(time.Now().Truncate(time.Second))}
}

// attachedENI is the operator's entry of an ENI attached to node.
func attachedENI(node, eni string) v1alpha1.ENIAttachment {
	return v1alpha1.ENIAttachment{NodeENI: "multus", NodeID: node, InstanceID: "i-0123456789abcdef0", ENIID: eni,
		SubnetID: "subnet-0123456789abcdef0", MACAddress: "02:00:00:00:00:01", DeviceIndex: 2, Status: v1alpha1.AttachmentAttached,
		LastUpdated: metav1.NewTime(time.Now().Truncate(time.Second))}
}

// listedENIs is how many ENIs the test's ENINode of node-a lists: more
// than the 64 entries status.interfaces takes, so the count is refused
// for itself, not for naming unlisted ENIs.
const listedENIs = 70

func checkAgentPolicy(t *testing.T, ns, saName, prefix string) {
	ctx := context.Background()
	admin := adminClient(t)
	nodeA, nodeB := prefix+"-node-a", prefix+"-node-b"
	agentA := serviceAccount(t, ns, saName, map[string][]string{nodeNameExtra: {nodeA}})
	noNode := serviceAccount(t, ns, saName, nil)

	// The operator's ENINodes: node-a's lists eni-a and more, node-b's
	// eni-b, reported by node-b's agent.
	newENINode := func(node string, atts []v1alpha1.ENIAttachment, report []v1alpha1.InterfaceStatus) {
		t.Helper()
		en := &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"team": "a"}},
			Spec: v1alpha1.ENINodeSpec{Attachments: atts}}
		if err := admin.Create(ctx, en); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, en) })
		if report != nil {
			en.Status.Interfaces = report
			if err := admin.Status().Update(ctx, en); err != nil {
				t.Fatal(err)
			}
		}
	}
	atts := []v1alpha1.ENIAttachment{attachedENI(nodeA, "eni-a")}
	for i := range listedENIs - 1 {
		atts = append(atts, attachedENI(nodeA, fmt.Sprintf("eni-%017x", i)))
	}
	newENINode(nodeA, atts, nil)
	newENINode(nodeB, []v1alpha1.ENIAttachment{attachedENI(nodeB, "eni-b")}, []v1alpha1.InterfaceStatus{interfaceEntry("eni-b", 1500)})
	get := func(node string) *v1alpha1.ENINode {
		t.Helper()
		en := &v1alpha1.ENINode{}
		if err := admin.Get(ctx, client.ObjectKey{Name: node}, en); err != nil {
			t.Fatal(err)
		}
		return en
	}
	refused := func(what string, err error) {
		t.Helper()
		refusedByPolicy(t, what, err)
	}

	// The policy reaches the admission plugin through an informer: wait
	// until it refuses, on an object of its own.
	probe := prefix + "-probe"
	newENINode(probe, []v1alpha1.ENIAttachment{attachedENI(probe, "eni-b")}, nil)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := agent.ApplyInterfaces(ctx, agentA, probe, []v1alpha1.InterfaceStatus{interfaceEntry("eni-b", 9001)})
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatal("the admission policy never refused an agent writing another node's ENINode")
	}

	// Its own node: added, changed.
	if err := agent.ApplyInterfaces(ctx, agentA, nodeA, []v1alpha1.InterfaceStatus{interfaceEntry("eni-a", 1500)}); err != nil {
		t.Fatalf("agent of node-a reporting its ENI: %v", err)
	}
	if err := agent.ApplyInterfaces(ctx, agentA, nodeA, []v1alpha1.InterfaceStatus{interfaceEntry("eni-a", 9001)}); err != nil {
		t.Fatalf("agent of node-a changing its report: %v", err)
	}
	if st := get(nodeA).Status.Interfaces; len(st) != 1 || st[0].MTU != 9001 {
		t.Fatalf("node-a's report %+v", st)
	}

	// Another node's ENINode, and ENIs node-a's spec does not list.
	refused("agent of node-a writing node-b's ENINode",
		agent.ApplyInterfaces(ctx, agentA, nodeB, []v1alpha1.InterfaceStatus{interfaceEntry("eni-b", 9001)}))
	refused("agent of node-a reporting node-b's ENI as its own",
		agent.ApplyInterfaces(ctx, agentA, nodeA, []v1alpha1.InterfaceStatus{interfaceEntry("eni-a", 9001), interfaceEntry("eni-b", 1500)}))

	// The hostile agent of issue 25: 1,450 entries of about 1 KB would
	// grow the object past what etcd takes. Refused, and so is a report
	// of more than 64 ENIs even when the spec lists them all.
	flood := []v1alpha1.InterfaceStatus{interfaceEntry("eni-a", 9001)}
	for i := range 1450 {
		e := interfaceEntry(fmt.Sprintf("eni-%017x", 0x1000+i), 1500)
		e.State, e.Message = v1alpha1.InterfaceFailed, strings.Repeat("x", 1000)
		flood = append(flood, e)
	}
	refusedAtAll(t, "agent of node-a reporting 1,451 ENIs", agent.ApplyInterfaces(ctx, agentA, nodeA, flood))
	var many []v1alpha1.InterfaceStatus
	for _, a := range atts[:65] {
		many = append(many, interfaceEntry(a.ENIID, 1500))
	}
	err := agent.ApplyInterfaces(ctx, agentA, nodeA, many)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "64") {
		t.Errorf("agent of node-a reporting 65 listed ENIs: %v; want refused by the CRD's limit of 64", err)
	}

	// A token without a node name (not bound to a pod on a node).
	refused("agent without a node name reporting node-a's ENI",
		agent.ApplyInterfaces(ctx, noNode, nodeA, []v1alpha1.InterfaceStatus{interfaceEntry("eni-a", 1280)}))

	// Beyond its status, even where RBAC allows it (a role widened by
	// mistake): the spec, the metadata, creating and deleting.
	widenRBAC(t, admin, ns, saName, prefix)
	try := func(what string, change func(en *v1alpha1.ENINode)) {
		t.Helper()
		var err error
		for range 50 { // RBAC reaches the authorizer through an informer too
			en := get(nodeA)
			old := en.DeepCopy()
			change(en)
			if err = agentA.Patch(ctx, en, client.MergeFrom(old)); !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		refused(what, err)
	}
	try("agent of node-a changing its ENINode's spec", func(en *v1alpha1.ENINode) { en.Spec.Attachments[0].MACAddress = "02:00:00:00:00:99" })
	try("agent of node-a changing its ENINode's labels", func(en *v1alpha1.ENINode) { en.Labels["team"] = "b" })
	try("agent of node-a adding an annotation", func(en *v1alpha1.ENINode) { en.Annotations = map[string]string{"x": "y"} })
	try("agent of node-a adding a finalizer", func(en *v1alpha1.ENINode) { en.Finalizers = []string{"example.com/keep"} })
	try("agent of node-a adding an owner reference", func(en *v1alpha1.ENINode) {
		en.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "other", UID: "0123"}}
	})
	refused("agent of node-a deleting its ENINode", agentA.Delete(ctx, &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: nodeA}}))
	refused("agent of node-a creating an ENINode",
		agentA.Create(ctx, &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-node-c"}}))

	// Nothing refused got through; the agent may still prune its report;
	// the operator (another user) is not restricted.
	if en := get(nodeB); len(en.Status.Interfaces) != 1 || en.Status.Interfaces[0].MTU != 1500 {
		t.Errorf("a refused write changed node-b's report: %+v", en.Status)
	}
	if en := get(nodeA); len(en.Spec.Attachments) != listedENIs || en.Spec.Attachments[0].MACAddress != "02:00:00:00:00:01" ||
		en.Labels["team"] != "a" || len(en.Annotations)+len(en.Finalizers)+len(en.OwnerReferences) != 0 ||
		len(en.Status.Interfaces) != 1 || en.Status.Interfaces[0].MTU != 9001 {
		t.Errorf("a refused write changed node-a's ENINode: %+v %+v", en.ObjectMeta, en.Status)
	}
	if err := agent.ApplyInterfaces(ctx, agentA, nodeA, nil); err != nil {
		t.Errorf("agent of node-a pruning its report: %v", err)
	}
	if st := get(nodeA).Status.Interfaces; len(st) != 0 {
		t.Errorf("node-a's report not pruned: %+v", st)
	}
	en := get(nodeA)
	old := en.DeepCopy()
	en.Spec.Attachments = en.Spec.Attachments[:1]
	if err := admin.Patch(ctx, en, client.MergeFrom(old)); err != nil {
		t.Errorf("the operator's spec write: %v", err)
	}
}

// refusedAtAll checks a write was refused, by the admission policy or
// the CRD's schema, whichever comes first.
func refusedAtAll(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("%s: %v; want refused", what, err)
		return
	}
	t.Logf("%s: refused: %.300s", what, err)
}

// widenRBAC grants the agent's ServiceAccount every write on ENINodes,
// which its role does not, so the admission policy alone answers.
func widenRBAC(t *testing.T, admin client.Client, ns, saName, prefix string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-widened-agent"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"eninodes", "eninodes/status"},
		Verbs: []string{"create", "update", "patch", "delete"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, o) })
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
