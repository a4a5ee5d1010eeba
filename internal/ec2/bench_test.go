package ec2

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/eni-operator/eni-operator/internal/emulator"
)

// BenchmarkLookupByIP500 measures 500 concurrent pod-IP lookups through
// the batcher, over HTTP against the emulator; it reports the AWS calls
// each round cost.
func BenchmarkLookupByIP500(b *testing.B) {
	w := newWorld(b, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 500}}})
	c := w.client(b, Config{QPS: 1000, Burst: 1000})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for _, n := range w.loaded.NetworkInterfaces {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.LookupByIP(context.Background(), n.PrivateIP); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(w.calls("DescribeNetworkInterfaces"))/float64(b.N), "aws-calls/op")
}

// BenchmarkInventoryRefresh10k measures one refresh of 10,000 ENIs into
// the EC2 state.
func BenchmarkInventoryRefresh10k(b *testing.B) {
	w := newWorld(b, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 10000}}})
	c := w.client(b, Config{QPS: 1000, Burst: 1000})
	s := NewState(c)
	if err := s.Watch(Scope{Name: "all"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Refresh(context.Background(), "all"); err != nil {
			b.Fatal(err)
		}
		if enis, _ := s.ENIsIn("all"); len(enis) != 10000 {
			b.Fatal(fmt.Sprint(len(enis), " ENIs"))
		}
	}
	b.ReportMetric(float64(w.calls("DescribeNetworkInterfaces"))/float64(b.N), "aws-calls/op")
}
