package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// CreateTags batch: ENIs that get the same tag set share one call. One ENI
// that no longer exists fails the whole call, so a failed batch is retried
// in halves until the others are tagged.
func newCreateTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	b := newBatcher(c, "create-tags", w, maxTagResources, c.execCreateTags)
	b.splittable = IsNotFound
	return b
}

func (c *Client) execCreateTags(ctx context.Context, tags tagSet, ids []string) (map[string]struct{}, error) {
	_, err := c.api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return allResources(ids), err
}
