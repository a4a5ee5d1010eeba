package ec2

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/singleflight"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// InstanceTypes caches DescribeInstanceTypes: the limits of a type never
// change, so each type costs one call for the life of the process, also
// when several NodeENIs ask for it at once (one call in flight per type).
type InstanceTypes struct {
	client   *Client
	mu       sync.Mutex
	limits   map[string]awstypes.InstanceLimits
	inFlight singleflight.Group
}

// NewInstanceTypes returns an empty cache of instance type limits.
func (c *Client) NewInstanceTypes() *InstanceTypes {
	return &InstanceTypes{client: c, limits: map[string]awstypes.InstanceLimits{}}
}

// Limits returns an instance type's network limits.
func (t *InstanceTypes) Limits(ctx context.Context, instanceType string) (awstypes.InstanceLimits, error) {
	t.mu.Lock()
	l, ok := t.limits[instanceType]
	t.mu.Unlock()
	if ok {
		return l, nil
	}
	v, err, _ := t.inFlight.Do(instanceType, func() (any, error) { return t.describe(ctx, instanceType) })
	if err != nil {
		return awstypes.InstanceLimits{}, err
	}
	return v.(awstypes.InstanceLimits), nil
}

func (t *InstanceTypes) describe(ctx context.Context, instanceType string) (awstypes.InstanceLimits, error) {
	out, err := t.client.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)}})
	if err != nil {
		return awstypes.InstanceLimits{}, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return awstypes.InstanceLimits{}, fmt.Errorf("instance type %s: EC2 reported no network limits", instanceType)
	}
	l := limitsOf(out.InstanceTypes[0].NetworkInfo)
	t.mu.Lock()
	t.limits[instanceType] = l
	t.mu.Unlock()
	return l, nil
}

// MaxENIs returns how many network interfaces an instance type takes.
func (t *InstanceTypes) MaxENIs(ctx context.Context, instanceType string) (int, error) {
	l, err := t.Limits(ctx, instanceType)
	return l.MaxENIs, err
}

func limitsOf(n *types.NetworkInfo) awstypes.InstanceLimits {
	l := awstypes.InstanceLimits{
		MaxENIs:          int(aws.ToInt32(n.MaximumNetworkInterfaces)),
		IPv4PerInterface: int(aws.ToInt32(n.Ipv4AddressesPerInterface)),
		IPv6PerInterface: int(aws.ToInt32(n.Ipv6AddressesPerInterface)),
		IPv6Supported:    aws.ToBool(n.Ipv6Supported),
		EFASupported:     aws.ToBool(n.EfaSupported),
	}
	for _, c := range n.NetworkCards {
		l.NetworkCards = append(l.NetworkCards, awstypes.NetworkCard{Index: int(aws.ToInt32(c.NetworkCardIndex)), MaxENIs: int(aws.ToInt32(c.MaximumNetworkInterfaces))})
	}
	return l
}
