package ec2

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/singleflight"
)

// InstanceLimits are the network limits of an instance type, as
// DescribeInstanceTypes' networkInfo gives them.
type InstanceLimits struct {
	// MaxENIs is how many network interfaces the type takes in all.
	MaxENIs int
	// IPv4PerInterface and IPv6PerInterface bound an interface's
	// addresses (IPv4: the primary included).
	IPv4PerInterface, IPv6PerInterface int
	IPv6Supported, EFASupported        bool
	// NetworkCards are the type's network cards, by index; a type that
	// reports none has one card (index 0) taking MaxENIs.
	NetworkCards []NetworkCard
}

// NetworkCard is one network card of an instance type.
type NetworkCard struct {
	Index, MaxENIs int
}

// Card returns the card with an index, and whether the type has it.
func (l InstanceLimits) Card(index int) (NetworkCard, bool) {
	if len(l.NetworkCards) == 0 && index == 0 {
		return NetworkCard{Index: 0, MaxENIs: l.MaxENIs}, true
	}
	for _, c := range l.NetworkCards {
		if c.Index == index {
			return c, true
		}
	}
	return NetworkCard{}, false
}

// InstanceTypes caches DescribeInstanceTypes: the limits of a type never
// change, so each type costs one call for the life of the process, also
// when several NodeENIs ask for it at once (one call in flight per type).
type InstanceTypes struct {
	client   *Client
	mu       sync.Mutex
	limits   map[string]InstanceLimits
	inFlight singleflight.Group
}

// NewInstanceTypes returns an empty cache of instance type limits.
func (c *Client) NewInstanceTypes() *InstanceTypes {
	return &InstanceTypes{client: c, limits: map[string]InstanceLimits{}}
}

// Limits returns an instance type's network limits.
func (t *InstanceTypes) Limits(ctx context.Context, instanceType string) (InstanceLimits, error) {
	t.mu.Lock()
	l, ok := t.limits[instanceType]
	t.mu.Unlock()
	if ok {
		return l, nil
	}
	v, err, _ := t.inFlight.Do(instanceType, func() (any, error) { return t.describe(ctx, instanceType) })
	if err != nil {
		return InstanceLimits{}, err
	}
	return v.(InstanceLimits), nil
}

func (t *InstanceTypes) describe(ctx context.Context, instanceType string) (InstanceLimits, error) {
	out, err := t.client.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)}})
	if err != nil {
		return InstanceLimits{}, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return InstanceLimits{}, fmt.Errorf("instance type %s: EC2 reported no network limits", instanceType)
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

func limitsOf(n *types.NetworkInfo) InstanceLimits {
	l := InstanceLimits{
		MaxENIs:          int(aws.ToInt32(n.MaximumNetworkInterfaces)),
		IPv4PerInterface: int(aws.ToInt32(n.Ipv4AddressesPerInterface)),
		IPv6PerInterface: int(aws.ToInt32(n.Ipv6AddressesPerInterface)),
		IPv6Supported:    aws.ToBool(n.Ipv6Supported),
		EFASupported:     aws.ToBool(n.EfaSupported),
	}
	for _, c := range n.NetworkCards {
		l.NetworkCards = append(l.NetworkCards, NetworkCard{Index: int(aws.ToInt32(c.NetworkCardIndex)), MaxENIs: int(aws.ToInt32(c.MaximumNetworkInterfaces))})
	}
	return l
}
