package ec2

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
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

// BenchmarkRollout40 measures what a NodeENI rollout costs the client:
// 40 ENIs, each created, attached and set to go with its instance
// (CreateNetworkInterface, AttachNetworkInterface,
// ModifyNetworkInterfaceAttribute), all at once, against an emulator that
// enforces AWS's buckets. Each round has a fresh account and client, as
// a rollout starts with full buckets. Besides the time per rollout it
// reports the seconds the calls waited for client-side tokens, summed
// over the concurrent calls, and the calls AWS throttled. With one
// 10 calls/s limiter over every call (k8s-eni-tagger's; Config{QPS: 10,
// Burst: 20}) a rollout took 10 s and its calls waited ~320 s in all;
// with AWS-shaped buckets none wait, as 40 calls of each action fit
// their buckets' bursts (100 for CreateNetworkInterface and
// ModifyNetworkInterfaceAttribute each, 50 for AttachNetworkInterface).
func BenchmarkRollout40(b *testing.B) {
	const n = 40
	instances := make([]emulator.InstanceSpec, n)
	for i := range instances {
		instances[i] = emulator.InstanceSpec{Type: "m5.large", Subnet: "a"}
	}
	on := true
	var waited float64
	var throttled int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := newWorld(b, emulator.World{Instances: instances})
		if err := w.emu.Configure(emulator.Config{Throttling: &on}); err != nil {
			b.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		c := w.client(b, Config{Registerer: reg})
		b.StartTimer()
		var wg sync.WaitGroup
		for _, inst := range w.loaded.Instances {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rolloutOne(c, w.subnet, inst.ID); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		waited += limiterWaitSeconds(b, reg)
		for _, count := range w.emu.Counts() {
			throttled += count.Throttled
		}
	}
	b.ReportMetric(waited/float64(b.N), "limiter-wait-s/op")
	b.ReportMetric(float64(throttled)/float64(b.N), "throttled/op")
}

// rolloutOne places one ENI on an instance as the NodeENI controller does.
func rolloutOne(c *Client, subnet, instance string) error {
	ctx := context.Background()
	eni, err := c.CreateENI(ctx, awstypes.CreateENIInput{SubnetID: subnet, ClientToken: instance})
	if err != nil {
		return err
	}
	attachment, err := c.AttachENI(ctx, eni.ID, instance, 1, 0)
	if err != nil {
		return err
	}
	return c.SetDeleteOnTermination(ctx, eni.ID, attachment, true)
}

// limiterWaitSeconds sums eni_operator_ec2_rate_limiter_wait_seconds.
func limiterWaitSeconds(b *testing.B, reg *prometheus.Registry) float64 {
	b.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "eni_operator_ec2_rate_limiter_wait_seconds" {
			for _, m := range mf.GetMetric() {
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}
