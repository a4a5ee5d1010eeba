package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// DeleteTags batch: ENIs that lose the same tag set (keys and the values
// they must still hold) share one call; like CreateTags, a batch that one
// missing ENI failed is retried in halves.
func newDeleteTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	b := newBatcher(c, "delete-tags", w, maxTagResources, c.execDeleteTags)
	b.splittable = IsNotFound
	return b
}

func (c *Client) execDeleteTags(ctx context.Context, tags tagSet, ids []string) (map[string]struct{}, error) {
	_, err := c.api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return allResources(ids), err
}
