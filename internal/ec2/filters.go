package ec2

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Filter is an EC2 filter: a name and values that are ORed.
type Filter struct {
	Name   string
	Values []string
}

// maxFilterValues is EC2's limit of filter values per call, which bounds
// every batch that is sent as one filter.
const maxFilterValues = 200

// scoped prepends the VPC filter, so a name or an address resolves within
// the cluster's VPC only.
func (c *Client) scoped(filters []Filter) []Filter {
	if c.vpcID == "" {
		return filters
	}
	return append([]Filter{{Name: "vpc-id", Values: []string{c.vpcID}}}, filters...)
}

func toFilters(fs []Filter) []types.Filter {
	out := make([]types.Filter, len(fs))
	for i, f := range fs {
		out[i] = types.Filter{Name: aws.String(f.Name), Values: f.Values}
	}
	return out
}
