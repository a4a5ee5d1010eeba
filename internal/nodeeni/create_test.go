package nodeeni_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

func threeNodes() emulator.World {
	return emulator.World{Instances: []emulator.InstanceSpec{
		{Type: "m5.xlarge", Subnet: "nodes-a"}, {Type: "m5.xlarge", Subnet: "nodes-a"},
		{Type: "m5.xlarge", Subnet: "nodes-b"}, {Type: "m5.xlarge", Subnet: "nodes-a"},
	}}
}

// Item 2: one ENI per (NodeENI, matching node, subnet of the node's zone),
// created with a ClientToken and the ownership tags, groups and subnets by
// name, attached at consecutive device indexes, DeleteOnTermination as the
// spec says, status per attachment, conditions, events and metrics.
func TestCreateAndAttach(t *testing.T) {
	h := newHarness(t, threeNodes())
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "multi-eni"})
	h.addNode("n1", h.instance(1), "us-east-1a", map[string]string{"ng": "multi-eni"})
	h.addNode("n2", h.instance(2), "us-east-1b", map[string]string{"ng": "multi-eni", "role": "storage"})
	h.addNode("n3", h.instance(3), "us-east-1a", nil) // not selected
	m := h.start(h.options())

	spec := h.spec(map[string]string{"ng": "multi-eni"})
	spec.SubnetNames = []string{"multus-a", "storage-a", "multus-b"}
	spec.SecurityGroupNames = []string{"multus"}
	spec.DeviceIndex = 2
	spec.Description = "Multus"
	spec.MTU = 9001
	spec.Tags = map[string]v1alpha1.TagValue{"Team": "net"}
	start := time.Now()
	multi := h.createNodeENI("multi", spec)
	got := h.ready("multi", 3)
	elapsed := time.Since(start)
	total, by := h.totalCalls()
	mutations := by["CreateNetworkInterface"] + by["AttachNetworkInterface"] + by["ModifyNetworkInterfaceAttribute"]
	t.Logf("5 ENIs created and attached in %v with %d EC2 calls (%d mutations: %d per ENI): %v", elapsed, total, mutations, mutations/5, by)
	if by["CreateNetworkInterface"] != 5 || by["AttachNetworkInterface"] != 5 || by["ModifyNetworkInterfaceAttribute"] != 5 {
		t.Errorf("want exactly 5 creates, 5 attaches and 5 DeleteOnTermination changes, got %v", by)
	}
	if by["DescribeInstances"] > 3 || by["DescribeInstanceTypes"] != 1 || by["DescribeSubnets"] != 1 || by["DescribeSecurityGroups"] != 1 {
		t.Errorf("lookups are not shared: %v", by)
	}

	// Layout: zone a nodes get multus-a at 2 and storage-a at 3; the zone
	// b node gets multus-b at 2.
	wantLayout := map[string]map[string]int{
		"n0": {h.Subnets["multus-a"]: 2, h.Subnets["storage-a"]: 3},
		"n1": {h.Subnets["multus-a"]: 2, h.Subnets["storage-a"]: 3},
		"n2": {h.Subnets["multus-b"]: 2},
	}
	instances := map[string]string{"n0": h.instance(0), "n1": h.instance(1), "n2": h.instance(2)}
	enis := h.enis()
	if len(enis) != 5 {
		t.Fatalf("%d ENIs in EC2, want 5: %+v", len(enis), enis)
	}
	for _, e := range enis {
		node := e.Tags[eniplan.TagNode]
		wantTags := map[string]string{
			eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "multi", eniplan.TagNodeENIUID: string(multi.UID),
			eniplan.TagInstance: instances[node], eniplan.TagNoManage: "true", "Team": "net",
			eniplan.TagDeviceIndexBase: "2", eniplan.TagDeviceIndex: strconv.Itoa(wantLayout[node][e.SubnetID]),
		}
		for k, v := range wantTags {
			if e.Tags[k] != v {
				t.Errorf("ENI %s tag %s = %q, want %q", e.ID, k, e.Tags[k], v)
			}
		}
		if _, err := time.Parse(time.RFC3339, e.Tags[eniplan.TagCreatedAt]); err != nil {
			t.Errorf("ENI %s created-at tag %q: %v", e.ID, e.Tags[eniplan.TagCreatedAt], err)
		}
		if !slices.Equal(e.SecurityGroups, []string{h.Groups["multus"]}) || e.Description != "Multus" {
			t.Errorf("ENI %s groups %v description %q", e.ID, e.SecurityGroups, e.Description)
		}
		a := e.Attachment
		if a == nil || a.InstanceID != instances[node] || a.DeviceIndex != wantLayout[node][e.SubnetID] || !a.DeleteOnTermination || a.Status != "attached" {
			t.Errorf("ENI %s of %s attachment %+v, want instance %s index %d DeleteOnTermination", e.ID, node, a, instances[node], wantLayout[node][e.SubnetID])
		}
	}
	if len(h.attachments(got.Name)) != 5 {
		t.Fatalf("status attachments %+v", h.attachments(got.Name))
	}
	byID := map[string]string{}
	for _, s := range []string{"multus-a", "storage-a", "multus-b"} {
		byID[h.Subnets[s]] = s
	}
	cidrs := map[string]string{"multus-a": "10.0.32.0/20", "storage-a": "10.0.64.0/20", "multus-b": "10.0.48.0/20"}
	for _, a := range h.attachments(got.Name) {
		if a.InstanceID != instances[a.NodeID] || a.AttachmentID == "" || a.MACAddress == "" || a.PrivateIP == "" ||
			a.Status != v1alpha1.AttachmentAttached || int(a.DeviceIndex) != wantLayout[a.NodeID][a.SubnetID] ||
			a.SubnetCIDR != cidrs[byID[a.SubnetID]] || a.MTU != 9001 || !a.DeleteOnTermination {
			t.Errorf("status entry %+v", a)
		}
	}
	if c := condition(got, v1alpha1.ConditionDegraded); c == nil || c.Status != "False" {
		t.Errorf("Degraded %+v", c)
	}

	// deleteOnTermination: false is honoured.
	keep := h.spec(map[string]string{"role": "storage"})
	keep.SubnetID = h.Subnets["storage-a"] // zone a only: the zone b node is reported
	keep.SubnetIDs = []string{h.Subnets["multus-b"]}
	keep.SecurityGroupIDs = []string{h.Groups["storage"]}
	keep.DeviceIndex = 1
	keep.DeleteOnTermination = ptr.To(false)
	h.createNodeENI("keep", keep)
	k := h.ready("keep", 1)
	if a := h.attachments(k.Name); len(a) != 1 || a[0].DeleteOnTermination || a[0].DeviceIndex != 1 || a[0].SubnetID != h.Subnets["multus-b"] {
		t.Fatalf("keep attachments %+v", a)
	}
	for _, e := range h.enis() {
		if e.Tags[eniplan.TagNodeENI] == "keep" && (e.Attachment == nil || e.Attachment.DeleteOnTermination) {
			t.Fatalf("keep's ENI %+v: want attached without DeleteOnTermination", e.Attachment)
		}
	}

	// Events for each step.
	h.eventually("events", waitFor, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := h.k8s.List(context.Background(), list); err != nil {
			return false, err.Error()
		}
		reasons := map[string]int{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "NodeENI" && e.Regarding.Name == "multi" {
				reasons[e.Reason]++
			}
		}
		return reasons["Created"] >= 1 && reasons["Attached"] >= 1, fmt.Sprint(reasons)
	})

	// Metrics.
	h.eventually("metrics", waitFor, func() (bool, string) {
		managed := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_enis_managed", nil)
		attached := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_enis_attached", nil)
		perNE := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_enis", map[string]string{"nodeeni": "multi", "state": "attached"})
		creates := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_operations_total", map[string]string{"operation": "create", "result": "success"})
		return managed == 6 && attached == 6 && perNE == 5 && creates == 6, fmt.Sprintf("managed %v attached %v multi %v creates %v", managed, attached, perNE, creates)
	})
}
