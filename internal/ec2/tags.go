package ec2

import (
	"context"
	"encoding/binary"
	"maps"
	"slices"

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

// CreateTagsAlone sets tags no other ENI is given with it (an ownership
// proof): one CreateTags at once, never held open for a batch it cannot
// join.
func (c *Client) CreateTagsAlone(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	return c.execCreateTags(ctx, encodeTags(tags), []string{eniID})
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

// tagSet is a tag set encoded as a batch key (encodeTags): equal sets,
// equal keys, so writes of the same tags share a call.
type tagSet string

// encodeTags is the one encoding of a tag set: its pairs in key order,
// each key and each value preceded by its length in bytes as a uvarint.
// Lengths, not delimiters, so no byte a key or value holds can be read
// back as a boundary between tags (FuzzTagSetKeyRoundTrip).
func encodeTags(tags map[string]string) tagSet {
	size := 0
	for k, v := range tags {
		size += len(k) + len(v) + 2*binary.MaxVarintLen64
	}
	b := make([]byte, 0, size)
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(tags[k])))
		b = append(b, tags[k]...)
	}
	return tagSet(b)
}

// decodeTags reads encodeTags's encoding back, in key order. Its input
// only ever comes from encodeTags; a truncated or malformed rest (which
// that never produces) ends the list rather than being guessed at.
func decodeTags(key tagSet) []types.Tag {
	var out []types.Tag
	for rest := string(key); rest != ""; {
		k, after, ok := cutString(rest)
		if !ok {
			break
		}
		v, after, ok := cutString(after)
		if !ok {
			break
		}
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		rest = after
	}
	return out
}

// cutString reads one length-prefixed string off the front of s.
func cutString(s string) (string, string, bool) {
	n, w := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if w <= 0 || n > uint64(len(s)-w) {
		return "", "", false
	}
	end := w + int(n)
	return s[w:end], s[end:], true
}

// sdkTags returns the tags sorted by key, the order every request of the
// operator sends them in.
func sdkTags(tags map[string]string) []types.Tag {
	out := make([]types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func tagMap(tags []types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		// Tag keys and, in a cluster, most values (tag sets shared by
		// a deployment's pods) repeat from ENI to ENI.
		out[intern(aws.ToString(t.Key))] = intern(aws.ToString(t.Value))
	}
	return out
}

// TagSetKey names a tag set by its one encoding (encodeTags), so no two
// sets share a name whatever bytes their keys and values hold, and equal
// sets have equal names (to share one copy).
func TagSetKey(tags map[string]string) string { return string(encodeTags(tags)) }

// newTagWriteBatcher batches a tag write (CreateTags or DeleteTags) over
// up to 1,000 ENIs. The call has one outcome for all of them; one ENI
// that no longer exists fails the whole call, so a failed batch is
// retried in halves until the others are written.
func newTagWriteBatcher(c *Client, kind, action string, w batchWindow,
	write func(ctx context.Context, tags tagSet, ids []string) error) *batcher[tagSet, string, struct{}] {
	b := newBatcher(c, batchedCall{kind: kind, action: action, maxItems: maxTagResources}, w, func(ctx context.Context, tags tagSet, ids []string) (map[string]struct{}, error) {
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
