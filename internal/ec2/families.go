package ec2

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Family is a group of EC2 actions whose token buckets AWS sizes alike
// ("Request throttling for the Amazon EC2 API"). AWS evaluates each
// action on its own, in a bucket of its family's burst and refill rate,
// so the client keeps one adaptive limiter per family with a bucket per
// action: a burst of tag writes never waits for describes (nor a
// ModifyNetworkInterfaceAttribute for the CreateNetworkInterface calls
// before it), and throttling in one family slows only that family.
type Family string

// The families of AWS's request throttling that the operator's calls fall
// in.
const (
	// FamilyDescribe: non-mutating actions (Describe*).
	FamilyDescribe Family = "describe"
	// FamilyUnfilteredDescribe: DescribeNetworkInterfaces,
	// DescribeInstances and DescribeSecurityGroups with neither a filter
	// (nor IDs) nor pagination. The operator's own listings are filtered
	// and paginated, so they count as FamilyDescribe; the family exists so
	// that a call that is not still gets AWS's smaller bucket.
	FamilyUnfilteredDescribe Family = "unfiltered-describe"
	// FamilyTags: CreateTags and DeleteTags.
	FamilyTags Family = "tags"
	// FamilyENIMutation: Create/DeleteNetworkInterface,
	// ModifyNetworkInterfaceAttribute, Assign/UnassignPrivateIpAddresses,
	// Assign/UnassignIpv6Addresses.
	FamilyENIMutation Family = "eni-mutation"
	// FamilyOtherMutation: every other mutating action, among them
	// Attach/DetachNetworkInterface.
	FamilyOtherMutation Family = "other-mutation"
)

// Families lists every family, in a stable order (metrics, tests).
func Families() []Family {
	return []Family{FamilyDescribe, FamilyUnfilteredDescribe, FamilyTags, FamilyENIMutation, FamilyOtherMutation}
}

// Bucket is a token bucket: Burst tokens, refilled at Refill per second.
type Bucket struct {
	Burst  int
	Refill float64
}

// AWSBucket is AWS's documented bucket of each action of a family, for
// one account and region (the same numbers the emulator enforces).
func AWSBucket(f Family) Bucket {
	switch f {
	case FamilyDescribe:
		return Bucket{Burst: 100, Refill: 20}
	case FamilyUnfilteredDescribe:
		return Bucket{Burst: 50, Refill: 10}
	case FamilyTags:
		return Bucket{Burst: 100, Refill: 10}
	case FamilyENIMutation:
		return Bucket{Burst: 100, Refill: 5}
	}
	return Bucket{Burst: 50, Refill: 5}
}

// scaled is the part of b this operator may use when it has share of the
// account's buckets: both the burst and the refill, at least one token.
func (b Bucket) scaled(share float64) Bucket {
	return Bucket{Burst: max(1, int(float64(b.Burst)*share)), Refill: b.Refill * share}
}

// arrivalJitter is how much earlier than the one before it a request
// may reach AWS, relative to when each took its client-side token.
const arrivalJitter = 500 * time.Millisecond

// clientBurst is the client's burst for AWS's bucket b: b's burst less
// arrivalJitter's worth of refill. A client mirroring AWS's bucket
// exactly leaves it near empty while calling at the refill rate, so a
// request arriving a little early is throttled and the family's rate
// halves (AIMD); the tokens left over absorb that jitter.
func (b Bucket) clientBurst() int {
	return max(1, b.Burst-int(math.Ceil(b.Refill*arrivalJitter.Seconds())))
}

// familyOf returns the family of an operation; input is the operation's
// input (nil when unknown), which decides whether a describe is
// unfiltered.
func familyOf(operation string, input any) Family {
	switch operation {
	case "CreateTags", "DeleteTags":
		return FamilyTags
	case "CreateNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute",
		"AssignPrivateIpAddresses", "UnassignPrivateIpAddresses", "AssignIpv6Addresses", "UnassignIpv6Addresses":
		return FamilyENIMutation
	}
	if !isDescribe(operation) {
		return FamilyOtherMutation
	}
	if unfiltered(input) {
		return FamilyUnfilteredDescribe
	}
	return FamilyDescribe
}

// isDescribe reports whether an operation is non-mutating: AWS counts
// Get* calls (GetSubnetCidrReservations) with the Describe* ones.
func isDescribe(operation string) bool {
	return strings.HasPrefix(operation, "Describe") || strings.HasPrefix(operation, "Get")
}

// unfiltered reports whether a describe input is one of the three AWS
// gives the smaller bucket when it narrows nothing: no filter, no IDs,
// and no pagination (neither MaxResults nor NextToken). IDs count as a
// filter, as the emulator's model of AWS has it.
func unfiltered(input any) bool {
	switch in := input.(type) {
	case *ec2.DescribeNetworkInterfacesInput:
		return len(in.Filters) == 0 && len(in.NetworkInterfaceIds) == 0 && in.MaxResults == nil && in.NextToken == nil
	case *ec2.DescribeInstancesInput:
		return len(in.Filters) == 0 && len(in.InstanceIds) == 0 && in.MaxResults == nil && in.NextToken == nil
	case *ec2.DescribeSecurityGroupsInput:
		return len(in.Filters) == 0 && len(in.GroupIds) == 0 && len(in.GroupNames) == 0 && in.MaxResults == nil && in.NextToken == nil
	}
	return false
}

// limits are the client's rate limiters: one adaptive limiter per family
// (each with a bucket per action, as AWS has them) and, when
// --aws-rate-limit-qps is set, an overall ceiling over them all
// (k8s-eni-tagger's single limiter). The ceiling does not adapt: AWS
// throttles an action, not the account, so only that action's family
// backs off.
type limits struct {
	family  map[Family]*adaptiveLimiter
	ceiling *rate.Limiter // nil: none
	clock   clock.Clock
}

func newLimits(cfg Config) limits {
	l := limits{family: make(map[Family]*adaptiveLimiter, len(Families())), clock: cfg.PacingClock}
	for _, f := range Families() {
		b, ok := cfg.Buckets[f]
		if !ok {
			b = AWSBucket(f)
		}
		b = b.scaled(cfg.Share)
		l.family[f] = newAdaptiveLimiter(b.Refill, b.clientBurst())
	}
	if cfg.QPS > 0 {
		l.ceiling = rate.NewLimiter(rate.Limit(cfg.QPS), cfg.Burst)
	}
	return l
}

// wait takes a token of the action's bucket in its family and one of the
// ceiling, and returns how long that took.
func (l limits) wait(ctx context.Context, f Family, action string) (time.Duration, error) {
	waited, err := takeToken(ctx, l.clock, l.family[f].bucket(action))
	if err != nil || l.ceiling == nil {
		return waited, err
	}
	more, err := takeToken(ctx, l.clock, l.ceiling)
	return waited + more, err
}

// delay is how long a call of the action would wait for a token (its
// bucket's or the ceiling's, whichever is later); 0: it would not.
func (l limits) delay(f Family, action string) time.Duration {
	now := l.clock.Now()
	d := l.family[f].delay(action, now)
	if l.ceiling != nil {
		d = max(d, tokenDelay(l.ceiling, now))
	}
	return d
}
