package readiness

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

func TestWaiting(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{corev1.LabelTopologyZone: "a", "ng": "multus"}}}
	nodeENI := func(name string, sel map[string]string, zones ...string) v1alpha1.NodeENI {
		ne := v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}, Spec: v1alpha1.NodeENISpec{NodeSelector: sel}}
		ne.Status.ObservedGeneration = 2
		for i, z := range zones {
			ne.Status.Subnets = append(ne.Status.Subnets, v1alpha1.ResolvedSubnet{ID: name + "-s" + string(rune('0'+i)), Zone: z})
		}
		return ne
	}
	attach := func(nodeENI, eni, status string) v1alpha1.ENIAttachment {
		return v1alpha1.ENIAttachment{NodeENI: nodeENI, ENIID: eni, Status: status}
	}
	iface := func(eni, state string) v1alpha1.InterfaceStatus {
		return v1alpha1.InterfaceStatus{ENIID: eni, State: state}
	}
	multus := nodeENI("multus", map[string]string{"ng": "multus"}, "a", "a", "b")
	storage := nodeENI("storage", map[string]string{}, "a")
	other := nodeENI("other", map[string]string{"ng": "other"}, "a")
	stale := nodeENI("multus", map[string]string{"ng": "multus"}, "a")
	stale.Generation = 3
	elsewhere := nodeENI("multus", map[string]string{"ng": "multus"}, "b")
	full := v1alpha1.ENINode{
		Spec: v1alpha1.ENINodeSpec{Attachments: []v1alpha1.ENIAttachment{
			attach("multus", "eni-1", v1alpha1.AttachmentAttached), attach("multus", "eni-2", v1alpha1.AttachmentAttached), attach("storage", "eni-3", v1alpha1.AttachmentAttached)}},
		Status: v1alpha1.ENINodeStatus{Interfaces: []v1alpha1.InterfaceStatus{
			iface("eni-1", v1alpha1.InterfaceConfigured), iface("eni-2", v1alpha1.InterfaceConfigured), iface("eni-3", v1alpha1.InterfaceConfigured)}},
	}
	halfConfigured := *full.DeepCopy()
	halfConfigured.Status.Interfaces[1].State = v1alpha1.InterfacePending
	oneAttaching := *full.DeepCopy()
	oneAttaching.Spec.Attachments[1].Status = v1alpha1.AttachmentCreated
	cases := []struct {
		name     string
		nodeENIs []v1alpha1.NodeENI
		en       v1alpha1.ENINode
		want     string // "" = lift; else a substring of the joined waits
	}{
		{"every selecting NodeENI attached and configured; an unselecting one ignored", []v1alpha1.NodeENI{multus, storage, other}, full, ""},
		{"no NodeENI selects the node: nothing to wait for", []v1alpha1.NodeENI{other}, v1alpha1.ENINode{}, ""},
		{"an interface the agent has not configured", []v1alpha1.NodeENI{multus, storage}, halfConfigured, "NodeENI multus: 1 of 2 interfaces configured"},
		{"an ENI not attached yet", []v1alpha1.NodeENI{multus, storage}, oneAttaching, "NodeENI multus: 1 of its 2 ENIs attached"},
		{"no ENI yet", []v1alpha1.NodeENI{storage}, v1alpha1.ENINode{}, "NodeENI storage: 0 of its 1 ENIs attached"},
		{"a spec its controller has not acted on", []v1alpha1.NodeENI{stale}, full, "has not acted on its current spec"},
		{"no subnet in the node's zone", []v1alpha1.NodeENI{elsewhere}, full, `zone "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(waiting(node, c.nodeENIs, &c.en), "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("waiting %q, want %q", got, c.want)
			}
		})
	}
	// The zone as the NodeENI controller reads it: here from the provider
	// ID, the node having no zone label.
	unlabelled := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"ng": "multus"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///a/i-0abc"}}
	if got := waiting(unlabelled, []v1alpha1.NodeENI{multus, storage}, &full); len(got) != 0 {
		t.Errorf("a node whose zone only its provider ID gives waits: %q", got)
	}
}
