package ec2

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// Each action falls in the family of AWS's throttling; the three
// describes AWS singles out are unfiltered only with neither a filter
// (nor IDs) nor pagination.
func TestFamilyOf(t *testing.T) {
	vpc := []types.Filter{{Name: aws.String("vpc-id"), Values: []string{"vpc-1"}}}
	for _, tc := range []struct {
		operation string
		input     any
		want      Family
	}{
		{"CreateTags", &ec2.CreateTagsInput{}, FamilyTags},
		{"DeleteTags", &ec2.DeleteTagsInput{}, FamilyTags},
		{"CreateNetworkInterface", &ec2.CreateNetworkInterfaceInput{}, FamilyENIMutation},
		{"DeleteNetworkInterface", nil, FamilyENIMutation},
		{"ModifyNetworkInterfaceAttribute", nil, FamilyENIMutation},
		{"AssignPrivateIpAddresses", nil, FamilyENIMutation},
		{"AssignIpv6Addresses", nil, FamilyENIMutation},
		{"UnassignIpv6Addresses", nil, FamilyENIMutation},
		{"UnassignPrivateIpAddresses", nil, FamilyENIMutation},
		{"AttachNetworkInterface", &ec2.AttachNetworkInterfaceInput{}, FamilyOtherMutation},
		{"DetachNetworkInterface", nil, FamilyOtherMutation},
		{"RunInstances", nil, FamilyOtherMutation},
		{"DescribeSubnets", &ec2.DescribeSubnetsInput{}, FamilyDescribe}, // not one of the three
		{"DescribeInstanceTypes", &ec2.DescribeInstanceTypesInput{}, FamilyDescribe},
		{"DescribeNetworkInterfaces", &ec2.DescribeNetworkInterfacesInput{}, FamilyUnfilteredDescribe},
		{"DescribeNetworkInterfaces", &ec2.DescribeNetworkInterfacesInput{Filters: vpc}, FamilyDescribe},
		{"DescribeNetworkInterfaces", &ec2.DescribeNetworkInterfacesInput{MaxResults: aws.Int32(1000)}, FamilyDescribe},
		{"DescribeNetworkInterfaces", &ec2.DescribeNetworkInterfacesInput{NextToken: aws.String("t")}, FamilyDescribe},
		{"DescribeNetworkInterfaces", &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{"eni-1"}}, FamilyDescribe},
		{"DescribeNetworkInterfaces", nil, FamilyDescribe}, // input unknown: the name alone
		{"DescribeInstances", &ec2.DescribeInstancesInput{}, FamilyUnfilteredDescribe},
		{"DescribeInstances", &ec2.DescribeInstancesInput{Filters: vpc}, FamilyDescribe},
		{"DescribeInstances", &ec2.DescribeInstancesInput{InstanceIds: []string{"i-1"}}, FamilyDescribe},
		{"DescribeInstances", &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)}, FamilyDescribe},
		{"DescribeSecurityGroups", &ec2.DescribeSecurityGroupsInput{}, FamilyUnfilteredDescribe},
		{"DescribeSecurityGroups", &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"default"}}, FamilyDescribe},
		{"DescribeSecurityGroups", &ec2.DescribeSecurityGroupsInput{Filters: vpc, MaxResults: aws.Int32(1000)}, FamilyDescribe},
	} {
		if got := familyOf(tc.operation, tc.input); got != tc.want {
			t.Errorf("familyOf(%s, %+v) = %s, want %s", tc.operation, tc.input, got, tc.want)
		}
	}
}

// Every family gets AWS's bucket times --aws-rate-limit-share for each
// of its actions, and its rate is exported under its family label; a
// ceiling exists only with --aws-rate-limit-qps.
func TestFamiliesShareAWSBuckets(t *testing.T) {
	w := newWorld(t, emulator.World{})
	reg := prometheus.NewRegistry()
	c := w.client(t, Config{Share: 0.5, Registerer: reg})
	for _, f := range Families() {
		aws, l := AWSBucket(f), c.limits.family[f]
		// The burst: half of AWS's, less half a second of the refill.
		half := Bucket{Burst: aws.Burst / 2, Refill: aws.Refill / 2}
		if b := l.bucket("Action"); b.Burst() != half.Burst-int(math.Ceil(half.Refill/2)) || float64(b.Limit()) != half.Refill || l.rate() != half.Refill {
			t.Errorf("%s: burst %d, rate %v; want half of AWS's %+v, the burst less half a second's refill", f, b.Burst(), l.rate(), aws)
		}
	}
	if c.limits.ceiling != nil {
		t.Error("a ceiling without --aws-rate-limit-qps")
	}
	if n := testutil.CollectAndCount(reg, "eni_operator_ec2_rate_limit_qps"); n != len(Families()) {
		t.Errorf("%d eni_operator_ec2_rate_limit_qps series, want one per family", n)
	}
	if d := w.client(t, Config{QPS: 3, Burst: 4}).limits.ceiling; d == nil || d.Limit() != 3 || d.Burst() != 4 {
		t.Errorf("ceiling %+v, want 3/s with a burst of 4", d)
	}
	// A family whose limit AWS raised: its bucket, still shared.
	raised := w.client(t, Config{Share: 0.5, Buckets: map[Family]Bucket{FamilyTags: {Burst: 1000, Refill: 50}}}).limits
	if l := raised.family[FamilyTags]; l.burst != 487 || l.rate() != 25 {
		t.Errorf("raised tags bucket: burst %d, rate %v; want 487 (500 less 13) and 25", l.burst, l.rate())
	}
	if l := raised.family[FamilyDescribe]; l.rate() != AWSBucket(FamilyDescribe).Refill/2 {
		t.Errorf("describe rate %v changed with the tags bucket", l.rate())
	}
}

// drain takes every token of the actions' buckets and nearly stops their
// refill, so any call that consulted one would wait for ~1000 s.
func drain(l *adaptiveLimiter, actions ...string) {
	for _, a := range actions {
		b := l.bucket(a)
		b.SetLimit(rate.Limit(0.001))
		b.ReserveN(time.Now(), l.burst)
	}
}

// An empty bucket holds only its own action's calls, as AWS's do: with
// the describes drained a CreateTags neither waits nor keeps its batch
// open, and the other way round; with CreateNetworkInterface's drained a
// ModifyNetworkInterfaceAttribute, of the same family, goes at once.
// rate.Limiter.Wait fails at once when its wait would pass the deadline,
// so a call that consulted a drained bucket would fail, not just be slow.
func TestBucketsDoNotWaitForEachOther(t *testing.T) {
	eni := func(w *world) string { return w.loaded.NetworkInterfaces[0].ID }
	for _, tc := range []struct {
		drained        Family
		drainedActions []string
		used           Family
		operation      string
		call           func(context.Context, *Client, *world) error
		batch          func(*Client) func() time.Duration // nil: not batched
	}{
		{FamilyDescribe, []string{"DescribeNetworkInterfaces", "DescribeInstances", "DescribeSubnets"}, FamilyTags, "CreateTags",
			func(ctx context.Context, c *Client, w *world) error {
				return c.CreateTags(ctx, eni(w), map[string]string{"k": "v"})
			}, func(c *Client) func() time.Duration { return c.createTagsBatch.gate }},
		{FamilyTags, []string{"CreateTags", "DeleteTags"}, FamilyDescribe, "DescribeNetworkInterfaces",
			func(ctx context.Context, c *Client, w *world) error {
				_, err := c.LookupByIP(ctx, w.loaded.NetworkInterfaces[0].PrivateIP)
				return err
			}, func(c *Client) func() time.Duration { return c.enisByIP.gate }},
		{FamilyENIMutation, []string{"CreateNetworkInterface"}, FamilyENIMutation, "ModifyNetworkInterfaceAttribute",
			func(ctx context.Context, c *Client, w *world) error { return c.SetDescription(ctx, eni(w), "d") }, nil},
	} {
		w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 1}}})
		reg := prometheus.NewRegistry()
		c := w.client(t, Config{TagBatchIdle: time.Millisecond, TagBatchMaxWait: 10 * time.Millisecond, Registerer: reg})
		drain(c.limits.family[tc.drained], tc.drainedActions...)
		if c.limits.delay(tc.drained, tc.drainedActions[0]) <= 0 {
			t.Fatalf("%s: drained, yet no delay", tc.drained)
		}
		if tc.batch != nil {
			if d := tc.batch(c)(); d != 0 {
				t.Errorf("the %s batcher would hold its batch %v for the drained %s buckets", tc.operation, d, tc.drained)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := tc.call(ctx, c, w); err != nil {
			t.Errorf("%s with %v drained: %v", tc.operation, tc.drainedActions, err)
		}
		cancel()
		if n := tokenWaits(t, reg, tc.operation, tc.used); n != 1 {
			t.Errorf("%s: %d token waits recorded under family %s, want 1", tc.operation, n, tc.used)
		}
		if tokens := c.limits.family[tc.used].bucket(tc.operation).Tokens(); tokens < float64(c.limits.family[tc.used].burst)-1.5 {
			t.Errorf("%s bucket has %v tokens, want all but the one call's", tc.operation, tokens)
		}
	}
}

// tokenWaits is how many attempts of operation waited for a token of
// family, from eni_operator_ec2_rate_limiter_wait_seconds.
func tokenWaits(t *testing.T, reg *prometheus.Registry, operation string, family Family) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "eni_operator_ec2_rate_limiter_wait_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == operation && labels["family"] == string(family) {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// Throttling in one family cuts that family's rate only: AWS's other
// families' buckets are untouched, so their calls keep their pace.
func TestThrottlingCutsOnlyItsFamily(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 2}}})
	on := true
	if err := w.emu.Configure(emulator.Config{Throttling: &on,
		Buckets: map[string]emulator.Bucket{"CreateTags": {Size: 1, Refill: 0.001}}}); err != nil {
		t.Fatal(err)
	}
	c := w.client(t, Config{MaxAttempts: 1, TagBatchIdle: time.Millisecond, TagBatchMaxWait: 10 * time.Millisecond})
	ctx := context.Background()
	id := w.loaded.NetworkInterfaces[0].ID
	if err := c.CreateTags(ctx, id, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTags(ctx, id, map[string]string{"b": "2"}); !IsThrottled(err) {
		t.Fatalf("second CreateTags: %v, want RequestLimitExceeded", err)
	}
	if _, err := c.ListENIs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.metrics.throttles.WithLabelValues("CreateTags", string(FamilyTags))); got != 1 {
		t.Errorf("throttles{CreateTags,tags} = %v, want 1", got)
	}
	for _, f := range Families() {
		want := AWSBucket(f).Refill
		if f == FamilyTags {
			want *= cutFactor
		}
		if got := c.limits.family[f].rate(); got != want {
			t.Errorf("%s rate %v, want %v", f, got, want)
		}
	}
	// The family backs off as one: DeleteTags's bucket, made afterwards,
	// refills at the cut rate too.
	if got, want := float64(c.limits.family[FamilyTags].bucket("DeleteTags").Limit()), AWSBucket(FamilyTags).Refill*cutFactor; got != want {
		t.Errorf("DeleteTags refills at %v, want the tags family's %v", got, want)
	}
}

// The middleware decides the family from the request's input: an
// unfiltered, unpaginated DescribeNetworkInterfaces takes the smaller
// bucket, the client's own filtered and paginated listing does not.
func TestUnfilteredDescribeFamily(t *testing.T) {
	w := newWorld(t, emulator.World{})
	reg := prometheus.NewRegistry()
	c := w.client(t, Config{Registerer: reg})
	ctx := context.Background()
	if _, err := c.api.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListENIs(ctx); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[Family]uint64{FamilyUnfilteredDescribe: 1, FamilyDescribe: 1} {
		if n := tokenWaits(t, reg, "DescribeNetworkInterfaces", f); n != want {
			t.Errorf("%d DescribeNetworkInterfaces attempts under %s, want %d", n, f, want)
		}
	}
}
