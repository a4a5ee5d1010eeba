package tagger_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/tagger"
)

// Pods whose IP no ENI holds (an overlay network's addresses, or ENIs not
// there yet) get ENINotFound at the cost of a few calls for all of them:
// their lookups share DescribeNetworkInterfaces calls, and the inventory
// refresh that looks inside delegated prefixes is shared too (it was one
// full refresh per pod, one after the other).
func TestPodsWhoseIPNoENIHoldsCostFewCalls(t *testing.T) {
	const n = 100
	h := newHarness(t, branchWorld(1500)) // an inventory refresh is 2 pages
	o := h.options()
	o.InventoryInterval = time.Hour
	h.startManager(o)
	// The first inventory refresh's 2 pages.
	h.eventually("the first inventory refresh", func() bool {
		return h.labelled("eni_operator_ec2_api_calls_total", "operation", "DescribeNetworkInterfaces") >= 2
	}, func() string {
		return fmt.Sprint(h.labelled("eni_operator_ec2_api_calls_total", "operation", "DescribeNetworkInterfaces"))
	})
	h.emu.ResetCounts()

	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.pod(fmt.Sprintf("u-%03d", i), fmt.Sprintf("10.0.100.%d", i+1), map[string]string{tagger.DefaultAnnotationKey: "Team=a"})
		}()
	}
	wg.Wait()
	for i := range n {
		h.waitCondition(fmt.Sprintf("u-%03d", i), tagger.ReasonENINotFound, "retrying, less often the longer it lasts")
	}
	// An inventory page is filtered on the VPC only; a lookup also on the
	// addresses it looks for.
	pages, lookups := 0, 0
	for _, c := range h.emu.Calls() {
		switch {
		case c.Action != "DescribeNetworkInterfaces":
			t.Errorf("unexpected %s call", c.Action)
		case c.Params["Filter.2.Name"] == nil && c.Params["Filter.1.Name"][0] == "vpc-id":
			pages++
		default:
			lookups++
		}
	}
	t.Logf("%d pods with unknown IPs: %d lookups, %d inventory pages", n, lookups, pages)
	if pages > 2 {
		t.Errorf("%d inventory pages, want at most 2 (one refresh shared by every miss)", pages)
	}
	if lookups > n/4 { // batched; how many batches depends on how fast the pods arrive
		t.Errorf("%d lookups for %d pods, want at most %d (batched)", lookups, n, n/4)
	}
}
