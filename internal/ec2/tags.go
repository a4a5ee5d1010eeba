package ec2

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// maxTagResources is EC2's limit of resources per CreateTags or DeleteTags.
const maxTagResources = 1000

// CreateTags sets tags on an ENI. Concurrent calls with the same tag set
// share one CreateTags call over up to 1,000 ENIs.
func (c *Client) CreateTags(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := c.createTagsBatch.do(ctx, encodeTags(tags), eniID)
	return err
}

// DeleteTags removes tags from an ENI only where they still hold the given
// values, so a value someone else wrote since is left alone. Concurrent
// calls with the same tag set share one call.
func (c *Client) DeleteTags(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := c.deleteTagsBatch.do(ctx, encodeTags(tags), eniID)
	return err
}

// tagSet is a tag set encoded as a batch key: equal sets, equal keys, so
// writes of the same tags share a call.
type tagSet string

// encodeTags separates keys and values with NUL, which cannot occur in
// tag keys or values, so the encoding is unambiguous.
func encodeTags(tags map[string]string) tagSet {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return tagSet(b.String())
}

func decodeTags(key tagSet) []types.Tag {
	parts := strings.Split(string(key), "\x00")
	var out []types.Tag
	for i := 0; i+1 < len(parts); i += 2 {
		out = append(out, types.Tag{Key: aws.String(parts[i]), Value: aws.String(parts[i+1])})
	}
	return out
}

// sdkTags returns the tags sorted by key, the order every request of the
// operator sends them in.
func sdkTags(tags map[string]string) []types.Tag { return decodeTags(encodeTags(tags)) }

func tagMap(tags []types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		// Tag keys and, in a cluster, most values (tag sets shared by
		// a deployment's pods) repeat from ENI to ENI.
		out[intern(aws.ToString(t.Key))] = intern(aws.ToString(t.Value))
	}
	return out
}

// TagSetKey names a tag set: its pairs in key order, each string preceded
// by its length, so no two sets share a name whatever bytes their keys
// and values hold. Equal sets have equal names (to share one copy).
func TagSetKey(tags map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		for _, part := range []string{k, tags[k]} {
			b.WriteString(strconv.Itoa(len(part)))
			b.WriteByte(':')
			b.WriteString(part)
		}
	}
	return b.String()
}

// newTagWriteBatcher batches a tag write (CreateTags or DeleteTags) over
// up to 1,000 ENIs. The call has one outcome for all of them; one ENI
// that no longer exists fails the whole call, so a failed batch is
// retried in halves until the others are written.
func newTagWriteBatcher(c *Client, kind, action string, w batchWindow,
	write func(ctx context.Context, tags tagSet, ids []string) error) *batcher[tagSet, string, struct{}] {
	b := newBatcher(c, kind, action, w, maxTagResources, func(ctx context.Context, tags tagSet, ids []string) (map[string]struct{}, error) {
		err := write(ctx, tags, ids)
		out := make(map[string]struct{}, len(ids))
		for _, id := range ids {
			out[id] = struct{}{}
		}
		return out, err
	})
	b.splittable = IsNotFound
	// Many tag sets written at once (20 deployments scaling out) go at
	// the rate the tags bucket refills: one call per tag set per turn.
	tags := c.limits.family[familyOf(action, nil)]
	b.pace = tags.rate
	return b
}
