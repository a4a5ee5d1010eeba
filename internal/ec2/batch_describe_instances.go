package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The get-instance batch: every GetInstance shares one DescribeInstances
// call filtered by ID.
func newDescribeInstancesBatcher(c *Client, w batchWindow) *batcher[noKey, string, Instance] {
	b := newBatcher(c, "get-instance", w, maxFilterValues, c.execDescribeInstances)
	b.missing = func(id string) error { return &notFoundError{code: "InvalidInstanceID.NotFound", id: id} }
	return b
}

// execDescribeInstances filters by ID rather than passing InstanceIds,
// which would fail the whole call for one instance that is gone.
func (c *Client) execDescribeInstances(ctx context.Context, _ noKey, ids []string) (map[string]Instance, error) {
	out := make(map[string]Instance, len(ids))
	in := &ec2.DescribeInstancesInput{Filters: toFilters([]Filter{{Name: "instance-id", Values: ids}})}
	for p := ec2.NewDescribeInstancesPaginator(c.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, err
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out[aws.ToString(i.InstanceId)] = fromInstance(i)
			}
		}
	}
	return out, nil
}
