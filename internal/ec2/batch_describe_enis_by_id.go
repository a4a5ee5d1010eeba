package ec2

import (
	"context"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// The get-ENI batch: every GetENI shares one DescribeNetworkInterfaces
// call filtered by ID, not scoped to the VPC (an ID is unique anyway).
func newDescribeENIsByIDBatcher(c *Client, w batchWindow) *batcher[noKey, string, awstypes.ENI] {
	b := newBatcher(c, batchedCall{kind: "get-eni", action: "DescribeNetworkInterfaces", maxItems: maxFilterValues}, w, c.execDescribeENIsByID)
	b.missing = func(id string) error { return &notFoundError{code: "InvalidNetworkInterfaceID.NotFound", id: id} }
	return b
}

// execDescribeENIsByID filters by ID rather than passing
// NetworkInterfaceIds, which would fail the whole call for one ENI that
// is gone.
func (c *Client) execDescribeENIsByID(ctx context.Context, _ noKey, ids []string) (map[string]awstypes.ENI, error) {
	enis, err := c.describeENIs(ctx, []Filter{{Name: "network-interface-id", Values: ids}}, false)
	out := make(map[string]awstypes.ENI, len(enis))
	for _, e := range enis {
		out[e.ID] = e
	}
	return out, err
}
