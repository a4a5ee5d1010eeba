package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdRequestLimit is etcd's default --max-request-bytes (1.5 MiB): an
// object larger than this cannot be written at all.
const etcdRequestLimit = 1572864

var sizeTime = metav1.NewTime(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))

// eniNodeOf is node n's ENINode holding perNode attachments and the
// agent's reports, with values of the lengths real IDs, addresses and
// names have.
func eniNodeOf(n, perNode int) *ENINode {
	node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", n/256, n%256)
	en := &ENINode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for i := range perNode {
		eni := fmt.Sprintf("eni-%017x", n*perNode+i)
		en.Spec.Attachments = append(en.Spec.Attachments, ENIAttachment{NodeENI: "multus", NodeID: node, InstanceID: fmt.Sprintf("i-%017x", n),
			ENIID: eni, AttachmentID: fmt.Sprintf("eni-attach-%017x", n*perNode+i), SubnetID: "subnet-0123456789abcdef0",
			SubnetCIDR: "10.1.0.0/16", MACAddress: "02:12:34:56:78:9a", PrivateIP: "10.1.200.200", DeviceIndex: int32(1 + i),
			DeleteOnTermination: true, MTU: 9001, Status: AttachmentAttached, LastUpdated: sizeTime})
		en.Status.Interfaces = append(en.Status.Interfaces, InterfaceStatus{ENIID: eni, InterfaceName: "multus" + fmt.Sprint(i),
			MTU: 9001, Up: true, State: InterfaceConfigured, LastUpdated: sizeTime})
	}
	return en
}

// nodeENIWithConditions is a NodeENI whose four conditions carry messages
// of the most the operator writes (bounded.Message, 1 KiB).
func nodeENIWithConditions() *NodeENI {
	ne := &NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "multus"}, Spec: NodeENISpec{
		NodeSelector: map[string]string{"ng": "multi-eni"}, SubnetIDs: []string{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"},
		SecurityGroupIDs: []string{"sg-0123456789abcdef0"}, DeviceIndex: 1}}
	ne.Status.DesiredNodes, ne.Status.ReadyNodes = 5000, 5000
	for _, t := range []string{ConditionReady, ConditionProgressing, ConditionDegraded, ConditionInterfacesConfigured} {
		ne.Status.Conditions = append(ne.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "SomeReason",
			Message: strings.Repeat("m", 1024), LastTransitionTime: sizeTime})
	}
	return ne
}

func sizeOf(t testing.TB, v any) int {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(raw)
}

// Neither object grows with the nodes a NodeENI selects: an ENINode is
// bounded by its CRD (128 attachments, 64 reports, every field at its
// maximum length) and a NodeENI's status holds counts and bounded
// conditions. Both stay far below what etcd takes.
func TestObjectsStayWithinEtcdLimit(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	en := &ENINode{ObjectMeta: metav1.ObjectMeta{Name: long(253)}}
	for i := range 128 {
		en.Spec.Attachments = append(en.Spec.Attachments, ENIAttachment{NodeENI: long(253), NodeID: long(253), InstanceID: long(32),
			ENIID: fmt.Sprintf("%032d", i), AttachmentID: long(40), SubnetID: long(40), SubnetCIDR: "255.255.255.255/32",
			MACAddress: "02:12:34:56:78:9a", PrivateIP: "255.255.255.255", DeviceIndex: 63, DeleteOnTermination: true, MTU: 9001,
			Status: AttachmentDetaching, Message: long(1024), LastUpdated: sizeTime})
	}
	for i := range 64 {
		en.Status.Interfaces = append(en.Status.Interfaces, InterfaceStatus{ENIID: fmt.Sprintf("%032d", i), InterfaceName: long(15), MTU: 9001,
			Up: true, DPDKBound: true, DPDKDriver: long(64), DPDKPCIAddress: long(16), DPDKResourceName: long(253), State: InterfaceFailed,
			Message: long(1024), LastUpdated: sizeTime})
	}
	if got := sizeOf(t, en); got > etcdRequestLimit/4 {
		t.Errorf("an ENINode at its CRD's bounds is %d bytes, more than a quarter of etcd's %d", got, etcdRequestLimit)
	}
	if got := sizeOf(t, nodeENIWithConditions()); got > 16*1024 {
		t.Errorf("a NodeENI with its conditions at their bounds is %d bytes, want at most 16 KiB", got)
	}
}

// BenchmarkObjectSizesAtScale reports the largest object a NodeENI over
// nodes × 2 ENIs writes: an ENINode (one per node) and the NodeENI
// itself, against etcd's request limit. Neither depends on the node
// count; the figure shows it.
func BenchmarkObjectSizesAtScale(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var largest, ne int
			for b.Loop() {
				largest = 0
				for n := range nodes {
					largest = max(largest, sizeOf(b, eniNodeOf(n, 2)))
				}
				ne = sizeOf(b, nodeENIWithConditions())
			}
			b.ReportMetric(float64(largest), "eninode-bytes")
			b.ReportMetric(float64(ne), "nodeeni-bytes")
			b.ReportMetric(float64(max(largest, ne))/etcdRequestLimit, "x-etcd-limit")
		})
	}
}
