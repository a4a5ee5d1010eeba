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
	// IPv6CIDR is the subnet's associated IPv6 block; empty when none.
	IPv6CIDR string
	Tags     map[string]string
}

// Subnets returns the VPC's subnets matching the filters, by ID.
func (c *Client) Subnets(ctx context.Context, filters ...Filter) ([]Subnet, error) {
	in := &ec2.DescribeSubnetsInput{Filters: toFilters(c.scoped(filters))}
	return allPagesByID(ctx, ec2.NewDescribeSubnetsPaginator(c.api, in),
		func(page *ec2.DescribeSubnetsOutput) []Subnet { return convert(page.Subnets, fromSubnet) },
		func(s Subnet) string { return s.ID })
}

func fromSubnet(s types.Subnet) Subnet {
	out := Subnet{ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId),
		AvailabilityZone: aws.ToString(s.AvailabilityZone), CIDR: aws.ToString(s.CidrBlock), Tags: tagMap(s.Tags)}
	for _, a := range s.Ipv6CidrBlockAssociationSet {
		if a.Ipv6CidrBlockState == nil || a.Ipv6CidrBlockState.State == types.SubnetCidrBlockStateCodeAssociated {
			out.IPv6CIDR = aws.ToString(a.Ipv6CidrBlock)
			break
		}
	}
	return out
}
