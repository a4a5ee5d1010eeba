package ec2

import (
	"context"
	"sync"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// Lookups arriving together share one batch of up to five describes of
// 199 addresses (the vpc-id filter takes the 200th value), sent at once:
// 1,000 lookups are a full batch of 995 (five describes) and a batch of
// the five left (one).
func TestLookupBatchSendsSeveralDescribesAtOnce(t *testing.T) {
	const n = 1000
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: n}}})
	c := w.client(t, Config{})
	var wg sync.WaitGroup
	for _, e := range w.loaded.NetworkInterfaces {
		wg.Go(func() {
			got, err := c.LookupByIP(context.Background(), e.PrivateIP)
			if err != nil || got.ID != e.ID {
				t.Errorf("LookupByIP(%s) = %s, %v; want %s", e.PrivateIP, got.ID, err, e.ID)
			}
		})
	}
	wg.Wait()
	if got := w.calls("DescribeNetworkInterfaces"); got != 6 {
		t.Fatalf("%d DescribeNetworkInterfaces for %d lookups, want 6 (995 in five, then five in one)", got, n)
	}
	for _, call := range w.emu.Calls() {
		if v := call.Params["Filter.2.Value.200"]; v != nil {
			t.Fatalf("a describe with more than 199 addresses: %v", call.Params["Filter.2.Name"])
		}
	}
}
