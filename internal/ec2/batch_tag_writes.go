package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The two tag-write batches, both built by newTagWriteBatcher: only the
// EC2 action differs.

// The CreateTags batch: ENIs that get the same tag set share one call.
func newCreateTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	return newTagWriteBatcher(c, "create-tags", "CreateTags", w, c.execCreateTags)
}

// The DeleteTags batch: ENIs that lose the same tag set (keys and the
// values they must still hold) share one call.
func newDeleteTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	return newTagWriteBatcher(c, "delete-tags", "DeleteTags", w, c.execDeleteTags)
}

func (c *Client) execCreateTags(ctx context.Context, tags tagSet, ids []string) error {
	_, err := c.api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return err
}

func (c *Client) execDeleteTags(ctx context.Context, tags tagSet, ids []string) error {
	_, err := c.api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return err
}
