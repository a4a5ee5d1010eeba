package nodeeni_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Item 6: operator-owned, available ENIs that no NodeENI wants are deleted
// after two sightings and the grace period; ENIs without the cluster's
// ownership tag, and attached ones, are never touched.
func TestCollector(t *testing.T) {
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Name: "i0", Type: "m5.xlarge", Subnet: "nodes-a"}}})
	ours := func(extra map[string]string) map[string]string {
		tags := map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "gone", eniplan.TagNodeENIUID: "6f0c1d2e-dead-4bee-8000-000000000000",
			eniplan.TagNode: "n9", eniplan.TagInstance: h.instance(0), eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
			eniplan.TagNoManage: "true"}
		for k, v := range extra {
			tags[k] = v
		}
		return tags
	}
	res, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", Tags: ours(map[string]string{eniplan.TagCreatedAt: old})}), // 0: old orphan
		proven(emulator.NetworkInterfaceSpec{Subnet: "multus-a", Tags: ours(nil)}),                                          // 1: orphan of unknown age: grace from first sighting
		{Subnet: "multus-a"}, // 2: not ours: no tags
		{Subnet: "multus-a", Tags: map[string]string{eniplan.TagCluster: "another-cluster", eniplan.TagCreatedAt: old}},                                    // 3: another cluster's
		{Subnet: "multus-a", Tags: map[string]string{eniplan.TagNodeENIUID: "x", eniplan.TagCreatedAt: old}},                                               // 4: no cluster tag
		proven(emulator.NetworkInterfaceSpec{Subnet: "nodes-a", Instance: "i0", DeviceIndex: 1, Tags: ours(map[string]string{eniplan.TagCreatedAt: old})}), // 5: ours but attached
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := func(i int) string { return res.NetworkInterfaces[i].ID }
	o := h.options()
	// Five resync intervals from an ENI's first sighting, on the stepped
	// clock.
	o.CollectorGracePeriod = 5 * resync
	m := h.startStepped(o)

	exists := func() map[string]bool {
		out := map[string]bool{}
		list, err := h.ec2Client().ListENIs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			out[e.ID] = true
		}
		return out
	}
	passes := func() float64 {
		return testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_collector_passes_total", nil)
	}
	h.eventually("the collector's first pass", waitFor, func() (bool, string) { return passes() >= 1, fmt.Sprint(passes()) })
	if !exists()[id(0)] {
		t.Fatal("old orphan deleted at its first sighting")
	}
	h.steps(1)
	h.eventually("old orphan deleted at its second sighting", waitFor, func() (bool, string) {
		return !exists()[id(0)], ""
	})
	h.steps(3) // four intervals since the first sighting: within the grace period
	if !exists()[id(1)] {
		t.Fatal("orphan of unknown age deleted within the grace period")
	}
	h.eventuallySteps("young orphan deleted after the grace period", 2, func() (bool, string) {
		return !exists()[id(1)], ""
	})
	h.steps(4)
	e := exists()
	for _, i := range []int{2, 3, 4, 5} {
		if !e[id(i)] {
			t.Errorf("ENI %d (%s) was deleted; only the cluster's available orphans may be", i, id(i))
		}
	}
	if d := h.calls("DeleteNetworkInterface"); d != 2 {
		t.Errorf("%d deletes, want 2", d)
	}
	if n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_cleanups_total", map[string]string{"reason": eniplan.CleanupOrphan, "outcome": "deleted"}); n != 2 {
		t.Errorf("orphan cleanups %v, want 2", n)
	}
}
