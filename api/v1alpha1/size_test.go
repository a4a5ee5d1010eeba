package v1alpha1

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdRequestLimit is etcd's default --max-request-bytes (1.5 MiB): a
// NodeENI larger than this cannot be written at all.
const etcdRequestLimit = 1572864

// nodeENIAtScale is a NodeENI whose status holds nodes × perNode
// attachments and the agents' reports, with values of the lengths real
// IDs, addresses and names have.
func nodeENIAtScale(nodes, perNode int) *NodeENI {
	ne := &NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "multus"}, Spec: NodeENISpec{
		NodeSelector: map[string]string{"ng": "multi-eni"}, SubnetIDs: []string{"subnet-0123456789abcdef0", "subnet-0123456789abcdef1"},
		SecurityGroupIDs: []string{"sg-0123456789abcdef0"}, DeviceIndex: 1}}
	now := metav1.NewTime(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	for n := range nodes {
		node := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", n/256, n%256)
		for i := range perNode {
			eni := fmt.Sprintf("eni-%017x", n*perNode+i)
			ne.Status.Attachments = append(ne.Status.Attachments, ENIAttachment{NodeID: node, InstanceID: fmt.Sprintf("i-%017x", n),
				ENIID: eni, AttachmentID: fmt.Sprintf("eni-attach-%017x", n*perNode+i), SubnetID: "subnet-0123456789abcdef0",
				SubnetCIDR: "10.1.0.0/16", MACAddress: "02:12:34:56:78:9a", PrivateIP: "10.1.200.200", DeviceIndex: int32(1 + i),
				DeleteOnTermination: true, MTU: 9001, Status: AttachmentAttached, LastUpdated: now})
			ne.Status.Interfaces = append(ne.Status.Interfaces, InterfaceStatus{NodeID: node, ENIID: eni, InterfaceName: "multus" + fmt.Sprint(i),
				MTU: 9001, Up: true, State: InterfaceConfigured, LastUpdated: now})
		}
	}
	return ne
}

// BenchmarkNodeENISizeAtScale reports how large one NodeENI grows with the
// nodes it serves (2 ENIs each) against etcd's request limit: per-node
// entries in one object do not fit at 5,000 nodes, so status must move to
// per-node objects (issue 25, item 3).
func BenchmarkNodeENISizeAtScale(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			ne := nodeENIAtScale(nodes, 2)
			var size int
			for b.Loop() {
				raw, err := json.Marshal(ne)
				if err != nil {
					b.Fatal(err)
				}
				size = len(raw)
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/etcdRequestLimit, "x-etcd-limit")
		})
	}
}
