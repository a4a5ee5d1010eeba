package nodeeni_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// ENIs of a version before proofs gain their proof once, where the
// evidence agrees: the NodeENI's status, which only the operator writes,
// names the ENI on the node and instance its tags name. A copy of its
// tags onto another ENI of the same node, which no status entry names,
// stays unproven and untouched.
func TestENIsOfEarlierVersionsGainTheirProofOnce(t *testing.T) {
	h, names := nodesHarness(t, 1, "upgrade")
	h.createNodeENI("upgrade", h.multusSpec(map[string]string{"ng": "upgrade"}))
	ne := h.get("upgrade")
	tags := map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "upgrade", eniplan.TagNodeENIUID: string(ne.UID),
		eniplan.TagNode: names[0], eniplan.TagInstance: h.instance(0), eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
		eniplan.TagCreatedAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), eniplan.TagNoManage: "true"}
	res, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Instance: h.instance(0), DeviceIndex: 1, DeleteOnTermination: true, Tags: tags},
		{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Instance: h.instance(0), DeviceIndex: 2, Tags: tags},
	}})
	if err != nil {
		t.Fatal(err)
	}
	earlier, copied := res.NetworkInterfaces[0], res.NetworkInterfaces[1]
	// The status the earlier version wrote.
	old := ne.DeepCopy()
	ne.Status.ObservedGeneration = ne.Generation
	ne.Status.Attachments = []v1alpha1.ENIAttachment{{NodeID: names[0], InstanceID: h.instance(0), ENIID: earlier.ID,
		SubnetID: h.Subnets["multus-a"], DeviceIndex: 1, Status: v1alpha1.AttachmentAttached}}
	if err := h.k8s.Status().Patch(context.Background(), ne, client.MergeFrom(old)); err != nil {
		t.Fatal(err)
	}
	h.Emulator.ResetCounts()

	m := h.start(h.options())
	h.ready("upgrade", 1)
	h.eventually("the copy reported as unproven", waitFor, func() (bool, string) {
		n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedUnproven})
		return n == 1, fmt.Sprint(n)
	})
	time.Sleep(4 * resync)
	for _, e := range h.enis() {
		switch e.ID {
		case earlier.ID:
			if e.Tags[eniplan.TagProof] == "" || e.Attachment == nil || e.Attachment.DeviceIndex != 1 {
				t.Errorf("the earlier version's ENI: proof %q, attachment %+v", e.Tags[eniplan.TagProof], e.Attachment)
			}
		case copied.ID:
			if e.Tags[eniplan.TagProof] != "" || e.Attachment == nil || e.Attachment.DeviceIndex != 2 {
				t.Errorf("the copy: proof %q, attachment %+v", e.Tags[eniplan.TagProof], e.Attachment)
			}
		}
	}
	_, calls := h.totalCalls()
	if calls["CreateTags"] != 1 || calls["CreateNetworkInterface"]+calls["DetachNetworkInterface"]+calls["DeleteNetworkInterface"] != 0 {
		t.Errorf("calls %v, want one CreateTags (the proof) and no create, detach or delete", calls)
	}
	h.onlyReads(copied.ID)
}

// Issue 37, point 3: once this version wrote a NodeENI, its deprecated
// status.attachments vouches for nothing. A foreign ENI carrying the
// NodeENI's ownership tags but no proof, written into the status by
// whoever may patch it, is never signed, detached or deleted.
func TestStatusAttachmentsVouchForNothingAfterTheUpgrade(t *testing.T) {
	h, names := nodesHarness(t, 1, "replay")
	h.start(h.options())
	h.createNodeENI("replay", h.multusSpec(map[string]string{"ng": "replay"}))
	ne := h.ready("replay", 1)
	tags := func(index string) map[string]string {
		return map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "replay", eniplan.TagNodeENIUID: string(ne.UID),
			eniplan.TagNode: names[0], eniplan.TagInstance: h.instance(0), eniplan.TagDeviceIndex: index, eniplan.TagDeviceIndexBase: "1",
			eniplan.TagCreatedAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), eniplan.TagNoManage: "true"}
	}
	res, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Tags: tags("1")},                                          // detached
		{Subnet: "multus-a", SecurityGroups: []string{h.Groups["multus"]}, Instance: h.instance(0), DeviceIndex: 2, Tags: tags("2")}, // attached
	}})
	if err != nil {
		t.Fatal(err)
	}
	var foreign []string
	for _, e := range res.NetworkInterfaces {
		foreign = append(foreign, e.ID)
	}
	h.Emulator.ResetCounts()
	for i := range 3 { // again after each status write of the operator's
		ne = h.get("replay")
		old := ne.DeepCopy()
		ne.Status.Attachments = nil
		for j, id := range foreign {
			ne.Status.Attachments = append(ne.Status.Attachments, v1alpha1.ENIAttachment{NodeID: names[0], InstanceID: h.instance(0), ENIID: id,
				SubnetID: h.Subnets["multus-a"], DeviceIndex: int32(j + 1), Status: v1alpha1.AttachmentAttached})
		}
		if err := h.k8s.Status().Patch(context.Background(), ne, client.MergeFrom(old)); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
		listed := h.Calls()["DescribeNetworkInterfaces"]
		h.eventually(fmt.Sprintf("two inventory refreshes after patch %d", i), waitFor, func() (bool, string) {
			n := h.Calls()["DescribeNetworkInterfaces"] - listed
			return n >= 2, fmt.Sprint(n, " refreshes")
		})
	}
	h.onlyReads(foreign...)
	for _, e := range h.enis() {
		if slices.Contains(foreign, e.ID) && e.Tags[eniplan.TagProof] != "" {
			t.Errorf("foreign ENI %s was signed", e.ID)
		}
	}
}
