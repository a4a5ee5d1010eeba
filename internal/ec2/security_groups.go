package ec2

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// SecurityGroup is a security group as the operator sees it.
type SecurityGroup struct {
	ID    string
	Name  string
	VPCID string
}

// SecurityGroups returns the VPC's security groups matching the filters
// (e.g. group-name), by ID, so names resolve within the cluster's VPC only.
func (c *Client) SecurityGroups(ctx context.Context, filters ...Filter) ([]SecurityGroup, error) {
	in := &ec2.DescribeSecurityGroupsInput{Filters: toFilters(c.scoped(filters))}
	var out []SecurityGroup
	for p := ec2.NewDescribeSecurityGroupsPaginator(c.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range page.SecurityGroups {
			out = append(out, SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), VPCID: aws.ToString(g.VpcId)})
		}
	}
	slices.SortFunc(out, func(a, b SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
