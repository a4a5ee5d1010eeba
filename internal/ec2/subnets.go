package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Subnet is a subnet as the operator sees it.
type Subnet struct {
	ID               string
	VPCID            string
	AvailabilityZone string
	CIDR             string
	Tags             map[string]string
}

// Subnets returns the VPC's subnets matching the filters, by ID.
func (c *Client) Subnets(ctx context.Context, filters ...Filter) ([]Subnet, error) {
	in := &ec2.DescribeSubnetsInput{Filters: toFilters(c.scoped(filters))}
	return allPagesByID(ctx, ec2.NewDescribeSubnetsPaginator(c.api, in),
		func(page *ec2.DescribeSubnetsOutput) []Subnet { return convert(page.Subnets, fromSubnet) },
		func(s Subnet) string { return s.ID })
}

func fromSubnet(s types.Subnet) Subnet {
	return Subnet{ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId),
		AvailabilityZone: aws.ToString(s.AvailabilityZone), CIDR: aws.ToString(s.CidrBlock), Tags: tagMap(s.Tags)}
}
