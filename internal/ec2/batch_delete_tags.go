package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// The DeleteTags batch: ENIs that lose the same tag set (keys and the
// values they must still hold) share one call.
func newDeleteTagsBatcher(c *Client, w batchWindow) *batcher[tagSet, string, struct{}] {
	return newTagWriteBatcher(c, "delete-tags", "DeleteTags", w, c.execDeleteTags)
}

func (c *Client) execDeleteTags(ctx context.Context, tags tagSet, ids []string) error {
	_, err := c.api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: decodeTags(tags)})
	return err
}
