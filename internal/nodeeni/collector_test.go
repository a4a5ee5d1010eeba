package nodeeni_test

import (
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
	o.CollectorGracePeriod = 1500 * time.Millisecond
	start := time.Now()
	m := h.start(o)

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
	h.eventually("old orphan deleted", waitFor, func() (bool, string) {
		return !exists()[id(0)], ""
	})
	if elapsed := time.Since(start); elapsed < resync {
		t.Fatalf("deleted after %v, before a second sighting", elapsed)
	}
	if e := exists(); !e[id(1)] && time.Since(start) < o.CollectorGracePeriod {
		t.Fatal("orphan of unknown age deleted within the grace period")
	}
	h.eventually("young orphan deleted after the grace period", waitFor, func() (bool, string) {
		return !exists()[id(1)], ""
	})
	if elapsed := time.Since(start); elapsed < o.CollectorGracePeriod {
		t.Fatalf("young orphan deleted after %v, within the grace period %v", elapsed, o.CollectorGracePeriod)
	}
	time.Sleep(4 * resync)
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
