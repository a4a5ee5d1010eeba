package ec2

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// InstanceLimits are the network limits of an instance type.
type InstanceLimits struct {
	MaxENIs          int
	IPv4PerInterface int
	IPv6PerInterface int
}

// InstanceTypes caches DescribeInstanceTypes: the limits of a type never
// change, so each type costs one call for the life of the process.
type InstanceTypes struct {
	client *Client
	mu     sync.Mutex
	limits map[string]InstanceLimits
}

// NewInstanceTypes returns an empty cache of instance type limits.
func (c *Client) NewInstanceTypes() *InstanceTypes {
	return &InstanceTypes{client: c, limits: map[string]InstanceLimits{}}
}

// MaxENIs returns how many network interfaces an instance type takes.
func (t *InstanceTypes) MaxENIs(ctx context.Context, instanceType string) (int, error) {
	l, err := t.Limits(ctx, instanceType)
	return l.MaxENIs, err
}

// Limits returns an instance type's network limits.
func (t *InstanceTypes) Limits(ctx context.Context, instanceType string) (InstanceLimits, error) {
	t.mu.Lock()
	l, ok := t.limits[instanceType]
	t.mu.Unlock()
	if ok {
		return l, nil
	}
	out, err := t.client.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)}})
	if err != nil {
		return InstanceLimits{}, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return InstanceLimits{}, fmt.Errorf("instance type %s: EC2 reported no network limits", instanceType)
	}
	n := out.InstanceTypes[0].NetworkInfo
	l = InstanceLimits{MaxENIs: int(aws.ToInt32(n.MaximumNetworkInterfaces)), IPv4PerInterface: int(aws.ToInt32(n.Ipv4AddressesPerInterface)),
		IPv6PerInterface: int(aws.ToInt32(n.Ipv6AddressesPerInterface))}
	t.mu.Lock()
	t.limits[instanceType] = l
	t.mu.Unlock()
	return l, nil
}
