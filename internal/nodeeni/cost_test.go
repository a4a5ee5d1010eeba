package nodeeni_test

import (
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// Item 8: with 50 nodes and 2 NodeENIs (100 ENIs) in steady state, one
// resync interval costs O(1) EC2 calls for the whole cluster — one
// inventory page, plus the subnet and group catalog when it is due — and
// no mutation.
func TestSteadyStateCost(t *testing.T) {
	const nodes = 50
	h, _ := nodesHarness(t, nodes, "cost")
	o := h.options()
	o.CatalogInterval = resync // the worst case: the catalog is re-read every interval too
	o.MinCatalogRefresh = resync
	h.startStepped(o)
	a := h.spec(map[string]string{"ng": "cost"})
	a.SubnetName, a.SecurityGroupNames, a.DeviceIndex = "multus-a", []string{"multus"}, 1
	b := h.spec(map[string]string{"ng": "cost"})
	b.SubnetName, b.SecurityGroupNames, b.DeviceIndex = "storage-a", []string{"storage"}, 2
	// Tags recorded as applied (ENINode appliedTags) cost nothing either.
	b.Tags = map[string]v1alpha1.TagValue{"Team": "storage"}
	start := time.Now()
	h.createNodeENI("cost-a", a)
	h.createNodeENI("cost-b", b)
	h.ready("cost-a", nodes)
	h.ready("cost-b", nodes)
	total, by := h.totalCalls()
	t.Logf("100 ENIs created and attached in %v: %d EC2 calls, %.2f per ENI (%v)", time.Since(start), total, float64(total)/100, by)

	h.Emulator.ResetCounts()
	const intervals = 10
	h.steps(intervals)
	total, by = h.totalCalls()
	perInterval := float64(total) / intervals
	t.Logf("steady state: %d EC2 calls in %d resync intervals: %.1f per interval (%v)", total, intervals, perInterval, by)
	if perInterval > 5 {
		t.Fatalf("%.1f EC2 calls per interval, want at most 5", perInterval)
	}
	for _, m := range []string{"CreateNetworkInterface", "AttachNetworkInterface", "ModifyNetworkInterfaceAttribute",
		"DetachNetworkInterface", "DeleteNetworkInterface", "DescribeInstances", "CreateTags", "DeleteTags"} {
		if by[m] != 0 {
			t.Errorf("%d %s calls in steady state", by[m], m)
		}
	}
	if by["DescribeNetworkInterfaces"] < intervals/2 {
		t.Errorf("only %d inventory refreshes in %d intervals: the resync is not running", by["DescribeNetworkInterfaces"], intervals)
	}
}
