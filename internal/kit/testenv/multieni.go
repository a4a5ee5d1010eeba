package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// What aws-multi-eni-controller leaves behind, written out from its
// behaviour rather than taken from eni-operator's code, so the tests that
// seed it are independent evidence of the takeover.

// MultiENIFinalizer is the finalizer aws-multi-eni-controller puts on
// every NodeENI before anything else.
const MultiENIFinalizer = "nodeeni.networking.k8s.aws/finalizer"

// MultiENITags are the tags aws-multi-eni-controller gives an ENI it
// creates for a NodeENI on a node in a subnet.
func MultiENITags(nodeENI, node, subnetID string) map[string]string {
	return map[string]string{"Name": fmt.Sprintf("nodeeni-%s-%s-%s", nodeENI, node, subnetID[len(subnetID)-8:]),
		"NodeENI": nodeENI, "Node": node, "SubnetID": subnetID,
		"kubernetes.io/cluster/managed-by": "nodeeni-controller", "node.k8s.amazonaws.com/no_manage": "true"}
}

// MultiENI is an ENI aws-multi-eni-controller made for a NodeENI on a
// node: Subnet is the world's name of its subnet, SubnetID its ID; Group
// "" gives it none; Instance "" leaves it detached, else it is attached
// there at Index.
type MultiENI struct {
	NodeENI, Node    string
	Subnet, SubnetID string
	Group            string
	Instance         string
	Index            int
}

// MultiENIInterface is e as aws-multi-eni-controller leaves it: its tags
// and the description it gives when the NodeENI sets none, attached with
// DeleteOnTermination, as its default configuration attaches.
func MultiENIInterface(e MultiENI) emulator.NetworkInterfaceSpec {
	s := emulator.NetworkInterfaceSpec{Subnet: e.Subnet, Tags: MultiENITags(e.NodeENI, e.Node, e.SubnetID), Description: "ENI created by nodeeni-controller for node " + e.Node}
	if e.Group != "" {
		s.SecurityGroups = []string{e.Group}
	}
	if e.Instance != "" {
		s.Instance, s.DeviceIndex, s.DeleteOnTermination = e.Instance, e.Index, true
	}
	return s
}

// MultiENIAttachment is one entry of aws-multi-eni-controller's
// status.attachments, in its format (dpdkBound included, a field this
// CRD does not have: the API server drops it, as it does on the real CRD).
type MultiENIAttachment struct {
	Node, Instance, ENI, AttachmentID, Subnet, SubnetCIDR string
	DeviceIndex                                           int
}

// CreateMultiENINodeENI creates a NodeENI as aws-multi-eni-controller
// leaves it: its finalizer, and a status it wrote (attachments only: no
// observedGeneration, no conditions).
func CreateMultiENINodeENI(t testing.TB, c client.Client, name string, spec v1alpha1.NodeENISpec, entries []MultiENIAttachment) *v1alpha1.NodeENI {
	t.Helper()
	ctx := context.Background()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{MultiENIFinalizer}}, Spec: spec}
	if err := c.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	records := make([]any, 0, len(entries))
	for _, e := range entries {
		records = append(records, map[string]any{"nodeID": e.Node, "instanceID": e.Instance, "eniID": e.ENI, "attachmentID": e.AttachmentID,
			"subnetID": e.Subnet, "subnetCIDR": e.SubnetCIDR, "mtu": 9001, "deviceIndex": e.DeviceIndex, "status": "attached",
			"lastUpdated": time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339), "dpdkBound": false})
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("NodeENI"))
	u.SetName(name)
	u.Object["status"] = map[string]any{"attachments": records}
	if err := c.Status().Patch(ctx, u, client.Merge); err != nil {
		t.Fatal(err)
	}
	got := GetNodeENI(t, c, name)
	if len(got.Status.Attachments) != len(entries) || got.Status.ObservedGeneration != 0 {
		t.Fatalf("seeded status %+v", got.Status)
	}
	return got
}
