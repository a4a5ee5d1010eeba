package ec2

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// world is an emulator over HTTP with a VPC, two subnets and a client.
type world struct {
	emu    *emulator.Emulator
	url    string
	vpc    string
	subnet string
	loaded emulator.LoadResult
}

func newWorld(t testing.TB, extra emulator.World) *world {
	t.Helper()
	emu := emulator.New(emulator.Options{DetachDelay: 50 * time.Millisecond})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	base := emulator.World{
		VPCs:    []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}, {Name: "other", CIDR: "10.1.0.0/16"}},
		Subnets: []emulator.SubnetSpec{{Name: "a", VPC: "main", CIDR: "10.0.0.0/18", AvailabilityZone: "us-east-1a", IPv6CIDR: "2600:1f18::/64"}, {Name: "other-a", VPC: "other", CIDR: "10.1.0.0/20", AvailabilityZone: "us-east-1a"}},
	}
	res, err := emu.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{emu: emu, url: srv.URL, vpc: res.VPCs[0], subnet: res.Subnets[0]}
	if w.loaded, err = emu.Load(extra); err != nil {
		t.Fatal(err)
	}
	emu.ResetCounts()
	return w
}

func (w *world) client(t testing.TB, cfg Config) *Client {
	t.Helper()
	if cfg.VPCID == "" {
		cfg.VPCID = w.vpc
	}
	return NewFromAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(w.url),
	}, cfg)
}

func (w *world) calls(action string) int { return w.emu.Counts()[action].Calls }

// 500 concurrent lookups of distinct IPs (branch ENIs' primaries and
// secondaries of node ENIs) cost at most 3 DescribeNetworkInterfaces calls.
func TestConcurrentLookupsCoalesce(t *testing.T) {
	w := newWorld(t, emulator.World{
		Instances:         []emulator.InstanceSpec{{Type: "m5.4xlarge", Subnet: "a", SecondaryIPCount: 29}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 471}},
	})
	want := map[string]string{} // IP -> ENI
	for _, ip := range w.loaded.Instances[0].SecondaryIPs {
		want[ip] = w.loaded.Instances[0].PrimaryENI
	}
	for _, n := range w.loaded.NetworkInterfaces {
		want[n.PrivateIP] = n.ID
	}
	if len(want) != 500 {
		t.Fatalf("world has %d pod IPs, want 500", len(want))
	}
	c := w.client(t, Config{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]string{}
	for ip := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.LookupByIP(context.Background(), ip)
			if err != nil {
				t.Errorf("LookupByIP(%s): %v", ip, err)
				return
			}
			mu.Lock()
			got[ip] = e.ID
			mu.Unlock()
		}()
	}
	wg.Wait()
	for ip, id := range want {
		if got[ip] != id {
			t.Errorf("%s: got ENI %q, want %q", ip, got[ip], id)
		}
	}
	if n := w.calls("DescribeNetworkInterfaces"); n > 3 {
		t.Fatalf("%d DescribeNetworkInterfaces calls for 500 lookups, want <= 3", n)
	}
	// An address nobody holds is NotFound, without an error for the others.
	if _, err := c.LookupByIP(context.Background(), "10.0.63.250"); !IsNotFound(err) {
		t.Fatalf("unknown IP: err %v, want NotFound", err)
	}
	// Lookups are VPC-scoped: every call carried the vpc-id filter.
	for _, call := range w.emu.Calls() {
		if call.Params["Filter.1.Name"][0] != "vpc-id" || call.Params["Filter.1.Value.1"][0] != w.vpc {
			t.Fatalf("lookup not scoped to the VPC: %v", call.Params)
		}
	}
}

func TestLookupIPv6(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", InterfaceType: "branch", IPv6Addresses: []string{"2600:1f18::1:5"}},
	}})
	c := w.client(t, Config{})
	e, err := c.LookupByIP(context.Background(), "2600:1f18::1:5")
	if err != nil || e.ID != w.loaded.NetworkInterfaces[0].ID {
		t.Fatalf("got %q, %v; want %s", e.ID, err, w.loaded.NetworkInterfaces[0].ID)
	}
}

// 500 concurrent writes of the same tag set on distinct ENIs cost one
// CreateTags call, and every ENI carries the tags afterwards.
func TestConcurrentTagWritesCoalesce(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 500}}})
	reg := prometheus.NewRegistry()
	c := w.client(t, Config{Registerer: reg})
	tags := map[string]string{"Team": "Dev", "Cost": "1"}
	var wg sync.WaitGroup
	for _, n := range w.loaded.NetworkInterfaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.CreateTags(context.Background(), n.ID, tags); err != nil {
				t.Errorf("CreateTags(%s): %v", n.ID, err)
			}
		}()
	}
	wg.Wait()
	if n := w.calls("CreateTags"); n != 1 {
		t.Fatalf("%d CreateTags calls, want 1", n)
	}
	if got := testutil.ToFloat64(c.metrics.calls.WithLabelValues("CreateTags")); got != 1 {
		t.Fatalf("calls metric %v, want 1", got)
	}
	enis, err := c.ListENIs(context.Background(), Filter{Name: "tag:Team", Values: []string{"Dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(enis) != 500 {
		t.Fatalf("%d ENIs carry the tags, want 500", len(enis))
	}
}

// DeleteTags removes a tag only where it still holds the value given.
func TestDeleteTagsMatchesValues(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 2}}})
	c := w.client(t, Config{})
	ctx := context.Background()
	a, b := w.loaded.NetworkInterfaces[0].ID, w.loaded.NetworkInterfaces[1].ID
	if err := c.CreateTags(ctx, a, map[string]string{"Team": "Dev", "Keep": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTags(ctx, b, map[string]string{"Team": "Ops"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, id := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.DeleteTags(ctx, id, map[string]string{"Team": "Dev"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := w.calls("DeleteTags"); n != 1 {
		t.Fatalf("%d DeleteTags calls, want 1 (coalesced)", n)
	}
	ea, _ := c.GetENI(ctx, a)
	eb, _ := c.GetENI(ctx, b)
	if _, ok := ea.Tags["Team"]; ok || ea.Tags["Keep"] != "x" {
		t.Fatalf("ENI a tags %v: want Team removed, Keep kept", ea.Tags)
	}
	if eb.Tags["Team"] != "Ops" {
		t.Fatalf("ENI b tags %v: a value someone else wrote must stay", eb.Tags)
	}
}

// A batch with one ENI that does not exist falls back to smaller batches:
// the others still get their tags, the bad one gets NotFound.
func TestFailedBatchFallsBack(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 7}}})
	c := w.client(t, Config{})
	ids := []string{}
	for _, n := range w.loaded.NetworkInterfaces {
		ids = append(ids, n.ID)
	}
	bad := "eni-0123456789abcdef0"
	ids = append(ids, bad)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.CreateTags(context.Background(), id, map[string]string{"k": "v"})
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id == bad {
			if !IsNotFound(errs[i]) {
				t.Errorf("bad ENI: err %v, want NotFound", errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("%s failed with its batch: %v", id, errs[i])
		}
	}
	enis, _ := c.ListENIs(context.Background(), Filter{Name: "tag:k", Values: []string{"v"}})
	if len(enis) != 7 {
		t.Fatalf("%d ENIs tagged, want 7", len(enis))
	}
	// 8 -> 4+4 -> the half with the bad ID: 2+2 -> 1+1: 1+2+2+2 = 7 calls.
	if n := w.calls("CreateTags"); n != 7 {
		t.Fatalf("%d CreateTags calls, want 7", n)
	}
}

// Permanent errors come back at once and typed; server errors are retried.
func TestErrorsAndRetries(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a"}}})
	c := w.client(t, Config{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	id := w.loaded.NetworkInterfaces[0].ID

	err := c.CreateTags(ctx, "eni-0123456789abcdef0", map[string]string{"k": "v"})
	if !IsNotFound(err) || Code(err) != "InvalidNetworkInterfaceID.NotFound" {
		t.Fatalf("missing ENI: %v, want InvalidNetworkInterfaceID.NotFound", err)
	}
	if n := w.calls("CreateTags"); n != 1 {
		t.Fatalf("NotFound retried: %d calls, want 1", n)
	}
	w.emu.ResetCounts()
	err = c.CreateTags(ctx, id, map[string]string{"aws:reserved": "v"})
	if !IsInvalid(err) || IsNotFound(err) {
		t.Fatalf("reserved key: %v, want a validation error", err)
	}
	if n := w.calls("CreateTags"); n != 1 {
		t.Fatalf("validation error retried: %d calls, want 1", n)
	}
	w.emu.ResetCounts()
	if err := w.emu.Configure(emulator.Config{Faults: map[string]emulator.Fault{"CreateTags": {ErrorRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	err = c.CreateTags(ctx, id, map[string]string{"k": "v"})
	if Code(err) != "InternalError" {
		t.Fatalf("persistent 500: %v, want InternalError", err)
	}
	if n := w.calls("CreateTags"); n != 3 {
		t.Fatalf("500s: %d calls, want MaxAttempts = 3", n)
	}
	// A context deadline ends the retries.
	if err := w.emu.Configure(emulator.Config{Faults: map[string]emulator.Fault{"CreateTags": {ErrorRate: 1, Latency: emulator.Duration{Duration: 50 * time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	slow := w.client(t, Config{MaxAttempts: 100, MaxBackoff: 10 * time.Millisecond})
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := slow.CreateTags(dctx, id, map[string]string{"k": "v"}); err == nil {
		t.Fatal("want an error when the deadline passes")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("deadline not honoured: returned after %v", d)
	}
}

// Under AWS-style throttling every request eventually succeeds, no
// caller sees RequestLimitExceeded, and the client slows down.
func TestThrottlingIsAbsorbed(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 3}}})
	on := true
	if err := w.emu.Configure(emulator.Config{Throttling: &on,
		Buckets: map[string]emulator.Bucket{"DescribeNetworkInterfaces": {Size: 5, Refill: 10}}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c := w.client(t, Config{QPS: 100, Burst: 100, MaxAttempts: 20, MaxBackoff: 200 * time.Millisecond, Registerer: reg})
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enis, err := c.ListENIs(context.Background())
			if err != nil {
				t.Errorf("ListENIs: %v", err)
			} else if len(enis) != 3 {
				t.Errorf("ListENIs returned %d ENIs, want 3", len(enis))
			}
		}()
	}
	wg.Wait()
	counts := w.emu.Counts()["DescribeNetworkInterfaces"]
	if counts.Throttled == 0 {
		t.Fatal("the emulator throttled nothing: the test did not exercise throttling")
	}
	if counts.Calls-counts.Throttled != 40 {
		t.Fatalf("%d successful calls, want 40", counts.Calls-counts.Throttled)
	}
	if got := testutil.ToFloat64(c.metrics.throttles.WithLabelValues("DescribeNetworkInterfaces", string(FamilyDescribe))); int(got) != counts.Throttled {
		t.Fatalf("throttle metric %v, emulator saw %d", got, counts.Throttled)
	}
	if r, aws := c.limits.family[FamilyDescribe].rate(), AWSBucket(FamilyDescribe).Refill; r >= aws {
		t.Fatalf("describe rate %v after throttling, want below AWS's %v", r, aws)
	}
}

// With --aws-rate-limit-qps set, the client never sends more than
// QPS*1s + Burst requests in any 1 s window, whatever the families allow.
// The emulator sees arrivals, which a loaded machine delays unevenly
// after the client's tokens: a 1 s window of arrivals holds what was
// sent within 1 s plus arrivalJitter. Unlimited, all 70 arrive at once.
func TestRateLimitBound(t *testing.T) {
	w := newWorld(t, emulator.World{})
	const qps, burst, total = 20, 10, 70
	c := w.client(t, Config{QPS: qps, Burst: burst})
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.ListENIs(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var times []time.Time
	for _, call := range w.emu.Calls() {
		times = append(times, call.Time)
	}
	if len(times) != total {
		t.Fatalf("%d calls recorded, want %d", len(times), total)
	}
	slices.SortFunc(times, time.Time.Compare)
	limit := burst + int(qps*(time.Second+arrivalJitter).Seconds())
	j := 0
	for i := range times {
		for times[i].Sub(times[j]) >= time.Second {
			j++
		}
		if n := i - j + 1; n > limit {
			t.Fatalf("%d calls arrived within 1s ending %v, want <= %d (%d/s, burst %d, arrival jitter %v)", n, times[i], limit, qps, burst, arrivalJitter)
		}
	}
}

// Concurrent GetENI and GetInstance calls share requests.
func TestGetByIDCoalesces(t *testing.T) {
	w := newWorld(t, emulator.World{
		Instances:         []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a"}, {Type: "t3.micro", Subnet: "a"}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 50}},
	})
	c := w.client(t, Config{})
	var wg sync.WaitGroup
	for _, n := range w.loaded.NetworkInterfaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.GetENI(context.Background(), n.ID)
			if err != nil || e.MAC != n.MAC {
				t.Errorf("GetENI(%s): %+v %v", n.ID, e.MAC, err)
			}
		}()
	}
	for _, i := range w.loaded.Instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.GetInstance(context.Background(), i.ID)
			if err != nil || got.ID != i.ID || len(got.ENIs) != 1 || got.ENIs[0].Attachment.DeviceIndex != 0 || got.AvailabilityZone != "us-east-1a" {
				t.Errorf("GetInstance(%s): %+v %v", i.ID, got, err)
			}
		}()
	}
	wg.Wait()
	if n, m := w.calls("DescribeNetworkInterfaces"), w.calls("DescribeInstances"); n != 1 || m != 1 {
		t.Fatalf("%d DescribeNetworkInterfaces and %d DescribeInstances calls, want 1 each", n, m)
	}
	if _, err := c.GetInstance(context.Background(), "i-0123456789abcdef0"); !IsNotFound(err) {
		t.Fatalf("missing instance: %v, want NotFound", err)
	}
}

// The standard AWS configuration chain finds the endpoint, region and
// credentials in the environment.
func TestNewFromEnvironment(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 2}}})
	t.Setenv("AWS_ENDPOINT_URL_EC2", w.url)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	c, err := New(context.Background(), Config{VPCID: w.vpc})
	if err != nil {
		t.Fatal(err)
	}
	enis, err := c.ListENIs(context.Background())
	if err != nil || len(enis) != 2 {
		t.Fatalf("ListENIs through the environment's endpoint: %d, %v", len(enis), err)
	}
}

// A create is retried only when EC2 cannot have carried it out: a retry
// of one that failed inside EC2 could make a second ENI where EC2 does not
// honour the ClientToken.
func TestCreateRetriedOnlyWhenNotCarriedOut(t *testing.T) {
	w := newWorld(t, emulator.World{})
	c := w.client(t, Config{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond})
	in := awstypes.CreateENIInput{SubnetID: w.subnet, ClientToken: "t"}
	for code, want := range map[string]int{"InternalError": 1, "Unavailable": 1, "RequestLimitExceeded": 3, "InvalidParameterValue": 1} {
		w.emu.ResetCounts()
		if err := w.emu.Configure(emulator.Config{Faults: map[string]emulator.Fault{"CreateNetworkInterface": {ErrorRate: 1, ErrorCode: code}}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateENI(context.Background(), in)
		if Code(err) != code {
			t.Fatalf("%s: got %v", code, err)
		}
		if IsRefused(err) != (code == "RequestLimitExceeded" || code == "InvalidParameterValue") {
			t.Errorf("%s: IsRefused %v", code, IsRefused(err))
		}
		if n := w.calls("CreateNetworkInterface"); n != want {
			t.Errorf("%s: %d calls, want %d", code, n, want)
		}
	}
}

// Concurrent lookups of one instance type's limits, from NodeENIs
// reconciled at once, cost one DescribeInstanceTypes.
func TestInstanceTypeLookupsCoalesce(t *testing.T) {
	w := newWorld(t, emulator.World{})
	types := w.client(t, Config{}).NewInstanceTypes()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if n, err := types.MaxENIs(context.Background(), "m5.xlarge"); err != nil || n != 4 {
				t.Errorf("m5.xlarge: %d ENIs, %v", n, err)
			}
		})
	}
	wg.Wait()
	if n := w.calls("DescribeInstanceTypes"); n != 1 {
		t.Errorf("%d DescribeInstanceTypes, want 1", n)
	}
}

// A tag set no other ENI is given (an ownership proof) is written at
// once in a call of its own, never held open for a batch.
func TestCreateTagsAloneIsNotBatched(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a"}, {Subnet: "a"}}})
	c := w.client(t, Config{TagBatchIdle: time.Hour, TagBatchMaxWait: time.Hour})
	var wg sync.WaitGroup
	for _, e := range w.loaded.NetworkInterfaces {
		wg.Go(func() {
			if err := c.CreateTagsAlone(context.Background(), e.ID, map[string]string{"k": "v"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := w.calls("CreateTags"); n != 2 {
		t.Errorf("%d CreateTags, want one per ENI", n)
	}
}
