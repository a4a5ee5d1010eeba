package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// SecurityGroups returns the VPC's security groups matching the filters
// (e.g. group-name), by ID, so names resolve within the cluster's VPC only.
func (c *Client) SecurityGroups(ctx context.Context, filters ...Filter) ([]awstypes.SecurityGroup, error) {
	in := &ec2.DescribeSecurityGroupsInput{Filters: toFilters(c.scoped(filters))}
	return allPagesByID(ctx, ec2.NewDescribeSecurityGroupsPaginator(c.api, in),
		func(page *ec2.DescribeSecurityGroupsOutput) []awstypes.SecurityGroup {
			return convert(page.SecurityGroups, fromSecurityGroup)
		},
		func(g awstypes.SecurityGroup) string { return g.ID })
}

func fromSecurityGroup(g types.SecurityGroup) awstypes.SecurityGroup {
	return awstypes.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), VPCID: aws.ToString(g.VpcId), Tags: tagMap(g.Tags)}
}
