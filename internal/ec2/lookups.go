package ec2

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Filter is an EC2 filter: a name and values that are ORed.
type Filter struct {
	Name   string
	Values []string
}

type ipFamily string

const (
	ipv4 ipFamily = "addresses.private-ip-address"
	ipv6 ipFamily = "ipv6-addresses.ipv6-address"
)

// batchTimeout bounds one batched call, retries included.
const batchTimeout = 2 * time.Minute

func (c *Client) initBatchers(cfg Config) {
	observe := func(kind string) func(int) {
		h := c.metrics.batchSize.WithLabelValues(kind)
		return func(n int) { h.Observe(float64(n)) }
	}
	lookupMax := maxFilterValues
	if c.vpcID != "" {
		lookupMax = maxLookupBatch
	}
	c.lookups = &batcher[ipFamily, string, ENI]{
		idle: cfg.BatchIdle, maxWait: cfg.BatchMaxWait, maxItems: lookupMax, timeout: batchTimeout, gate: c.limiter.delay,
		run: c.lookupIPs,
		missing: func(ip string) error {
			return &notFoundError{code: "InvalidAddress.NotFound", id: "no network interface holds " + ip}
		},
		observe: observe("lookup-ip"),
	}
	c.enisByID = &batcher[string, string, ENI]{
		idle: cfg.BatchIdle, maxWait: cfg.BatchMaxWait, maxItems: maxFilterValues, timeout: batchTimeout, gate: c.limiter.delay,
		run: func(ctx context.Context, _ string, ids []string) (map[string]ENI, error) {
			enis, err := c.describeENIs(ctx, []Filter{{Name: "network-interface-id", Values: ids}}, false)
			out := make(map[string]ENI, len(enis))
			for _, e := range enis {
				out[e.ID] = e
			}
			return out, err
		},
		missing: func(id string) error { return &notFoundError{code: "InvalidNetworkInterfaceID.NotFound", id: id} },
		observe: observe("get-eni"),
	}
	c.instances = &batcher[string, string, Instance]{
		idle: cfg.BatchIdle, maxWait: cfg.BatchMaxWait, maxItems: maxFilterValues, timeout: batchTimeout, gate: c.limiter.delay,
		run:     c.describeInstances,
		missing: func(id string) error { return &notFoundError{code: "InvalidInstanceID.NotFound", id: id} },
		observe: observe("get-instance"),
	}
	c.createTag = &batcher[string, string, struct{}]{
		idle: cfg.TagBatchIdle, maxWait: cfg.TagBatchMaxWait, maxItems: maxTagResources, timeout: batchTimeout, gate: c.limiter.delay,
		run:        c.createTags,
		splittable: IsNotFound,
		observe:    observe("create-tags"),
	}
	c.deleteTag = &batcher[string, string, struct{}]{
		idle: cfg.TagBatchIdle, maxWait: cfg.TagBatchMaxWait, maxItems: maxTagResources, timeout: batchTimeout, gate: c.limiter.delay,
		run:        c.deleteTags,
		splittable: IsNotFound,
		observe:    observe("delete-tags"),
	}
}

// LookupByIP finds the ENI holding a private IPv4 (primary or secondary)
// or IPv6 address in the client's VPC. Concurrent lookups share one
// DescribeNetworkInterfaces call of up to 199 addresses. Addresses inside
// delegated prefixes are not found this way; use the Inventory.
func (c *Client) LookupByIP(ctx context.Context, ip string) (ENI, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ENI{}, fmt.Errorf("looking up an ENI by IP: %q is not an IP address", ip)
	}
	family := ipv4
	if a.Is6() && !a.Is4In6() {
		family = ipv6
	}
	return c.lookups.do(ctx, family, a.Unmap().String())
}

func (c *Client) lookupIPs(ctx context.Context, family ipFamily, ips []string) (map[string]ENI, error) {
	enis, err := c.describeENIs(ctx, []Filter{{Name: string(family), Values: ips}}, true)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(ips))
	for _, ip := range ips {
		want[ip] = true
	}
	out := make(map[string]ENI, len(ips))
	for _, e := range enis {
		held := append([]string{e.PrimaryIP}, e.SecondaryIPs...)
		if family == ipv6 {
			held = e.IPv6Addresses
		}
		for _, ip := range held {
			if want[ip] {
				out[ip] = e
			}
		}
	}
	return out, nil
}

// GetENI returns one ENI by ID; concurrent calls share one request.
func (c *Client) GetENI(ctx context.Context, id string) (ENI, error) {
	return c.enisByID.do(ctx, "", id)
}

// GetInstance returns one instance by ID; concurrent calls share one request.
func (c *Client) GetInstance(ctx context.Context, id string) (Instance, error) {
	return c.instances.do(ctx, "", id)
}

func (c *Client) describeInstances(ctx context.Context, _ string, ids []string) (map[string]Instance, error) {
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

// ListENIs returns every ENI of the client's VPC that matches the filters,
// reading pages of 1,000: the cost is pages, not ENIs.
func (c *Client) ListENIs(ctx context.Context, filters ...Filter) ([]ENI, error) {
	return c.listENIs(ctx, filters)
}

func (c *Client) listENIs(ctx context.Context, filters []Filter) ([]ENI, error) {
	in := &ec2.DescribeNetworkInterfacesInput{Filters: toFilters(c.scoped(filters)), MaxResults: aws.Int32(pageSize)}
	var out []ENI
	for p := ec2.NewDescribeNetworkInterfacesPaginator(c.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, n := range page.NetworkInterfaces {
			out = append(out, fromNetworkInterface(n))
		}
	}
	return out, nil
}

// describeENIs is an unpaginated, filtered DescribeNetworkInterfaces (used
// for batches, whose filters bound the result), following NextToken if
// AWS paginates anyway.
func (c *Client) describeENIs(ctx context.Context, filters []Filter, scoped bool) ([]ENI, error) {
	if scoped {
		filters = c.scoped(filters)
	}
	in := &ec2.DescribeNetworkInterfacesInput{Filters: toFilters(filters)}
	var out []ENI
	for {
		page, err := c.api.DescribeNetworkInterfaces(ctx, in)
		if err != nil {
			return out, err
		}
		for _, n := range page.NetworkInterfaces {
			out = append(out, fromNetworkInterface(n))
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// scoped prepends the VPC filter.
func (c *Client) scoped(filters []Filter) []Filter {
	if c.vpcID == "" {
		return filters
	}
	return append([]Filter{{Name: "vpc-id", Values: []string{c.vpcID}}}, filters...)
}

func toFilters(fs []Filter) []types.Filter {
	out := make([]types.Filter, len(fs))
	for i, f := range fs {
		out[i] = types.Filter{Name: aws.String(f.Name), Values: f.Values}
	}
	return out
}

// CreateTags sets tags on an ENI. Concurrent calls with the same tag set
// share one CreateTags call over up to 1,000 ENIs.
func (c *Client) CreateTags(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := c.createTag.do(ctx, encodeTags(tags), eniID)
	return err
}

// DeleteTags removes tags from an ENI only where they still hold the given
// values, so a value someone else wrote since is left alone. Concurrent
// calls with the same tag set share one call.
func (c *Client) DeleteTags(ctx context.Context, eniID string, tags map[string]string) error {
	if len(tags) == 0 {
		return nil
	}
	_, err := c.deleteTag.do(ctx, encodeTags(tags), eniID)
	return err
}

func (c *Client) createTags(ctx context.Context, key string, ids []string) (map[string]struct{}, error) {
	_, err := c.api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: decodeTags(key)})
	return allOf(ids), err
}

func (c *Client) deleteTags(ctx context.Context, key string, ids []string) (map[string]struct{}, error) {
	_, err := c.api.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: decodeTags(key)})
	return allOf(ids), err
}

func allOf(ids []string) map[string]struct{} {
	out := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		out[id] = struct{}{}
	}
	return out
}

// encodeTags turns a tag set into a batch key: equal sets, equal keys.
// NUL cannot occur in tag keys or values, so the encoding is unambiguous.
func encodeTags(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

func decodeTags(key string) []types.Tag {
	parts := strings.Split(key, "\x00")
	var out []types.Tag
	for i := 0; i+1 < len(parts); i += 2 {
		out = append(out, types.Tag{Key: aws.String(parts[i]), Value: aws.String(parts[i+1])})
	}
	return out
}
