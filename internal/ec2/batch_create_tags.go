package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The CreateTags batch: ENIs that get the same tag set share one call.
func newCreateTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	return newTagWriteBatcher(c, "create-tags", "CreateTags", w, c.execCreateTags)
}

func (c *Client) execCreateTags(ctx context.Context, tags tagSet, ids []string) error {
	_, err := c.api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return err
}
