package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The get-instance batch: every GetInstance shares one DescribeInstances
// call filtered by ID.
func newDescribeInstancesBatcher(c *Client, w batchWindow) *batcher[noKey, string, Instance] {
	b := newBatcher(c, batchedCall{kind: "get-instance", action: "DescribeInstances", maxItems: maxFilterValues}, w, c.execDescribeInstances)
	b.missing = func(id string) error { return &notFoundError{code: "InvalidInstanceID.NotFound", id: id} }
	return b
}

// execDescribeInstances filters by ID rather than passing InstanceIds,
// which would fail the whole call for one instance that is gone.
func (c *Client) execDescribeInstances(ctx context.Context, _ noKey, ids []string) (map[string]Instance, error) {
	in := &ec2.DescribeInstancesInput{Filters: toFilters([]Filter{{Name: "instance-id", Values: ids}})}
	instances, err := allPages(ctx, ec2.NewDescribeInstancesPaginator(c.api, in), func(page *ec2.DescribeInstancesOutput) []Instance {
		var out []Instance
		for _, r := range page.Reservations {
			out = append(out, convert(r.Instances, fromInstance)...)
		}
		return out
	})
	out := make(map[string]Instance, len(instances))
	for _, i := range instances {
		out[i.ID] = i
	}
	return out, err
}
