package ec2

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// InstanceTypes caches DescribeInstanceTypes: the limits of a type never
// change, so each type costs one call for the life of the process.
type InstanceTypes struct {
	client *Client
	mu     sync.Mutex
	limits map[string]int
}

// NewInstanceTypes returns an empty cache of instance type ENI limits.
func (c *Client) NewInstanceTypes() *InstanceTypes {
	return &InstanceTypes{client: c, limits: map[string]int{}}
}

// MaxENIs returns how many network interfaces an instance type takes.
func (t *InstanceTypes) MaxENIs(ctx context.Context, instanceType string) (int, error) {
	t.mu.Lock()
	n, ok := t.limits[instanceType]
	t.mu.Unlock()
	if ok {
		return n, nil
	}
	out, err := t.client.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)}})
	if err != nil {
		return 0, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return 0, fmt.Errorf("instance type %s: EC2 reported no network limits", instanceType)
	}
	n = int(aws.ToInt32(out.InstanceTypes[0].NetworkInfo.MaximumNetworkInterfaces))
	t.mu.Lock()
	t.limits[instanceType] = n
	t.mu.Unlock()
	return n, nil
}
