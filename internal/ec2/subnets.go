package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Subnets returns the VPC's subnets matching the filters, by ID.
func (c *Client) Subnets(ctx context.Context, filters ...Filter) ([]awstypes.Subnet, error) {
	in := &ec2.DescribeSubnetsInput{Filters: toFilters(c.scoped(filters))}
	return allPagesByID(ctx, ec2.NewDescribeSubnetsPaginator(c.api, in),
		func(page *ec2.DescribeSubnetsOutput) []awstypes.Subnet { return convert(page.Subnets, fromSubnet) },
		func(s awstypes.Subnet) string { return s.ID })
}

func fromSubnet(s types.Subnet) awstypes.Subnet {
	out := awstypes.Subnet{ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId),
		AvailabilityZone: aws.ToString(s.AvailabilityZone), CIDR: aws.ToString(s.CidrBlock), Tags: tagMap(s.Tags)}
	for _, a := range s.Ipv6CidrBlockAssociationSet {
		if a.Ipv6CidrBlockState == nil || a.Ipv6CidrBlockState.State == types.SubnetCidrBlockStateCodeAssociated {
			out.IPv6CIDR = aws.ToString(a.Ipv6CidrBlock)
			break
		}
	}
	return out
}
