package ec2

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// ipFamily is the key of the lookup-by-IP batch: the DescribeNetworkInterfaces
// filter that finds an address of the family. IPv4 and IPv6 addresses
// need different filters, so they go in different calls.
type ipFamily string

const (
	ipv4 ipFamily = "addresses.private-ip-address"
	ipv6 ipFamily = "ipv6-addresses.ipv6-address"
)

// maxLookupBatch leaves one of EC2's filter values to the vpc-id filter.
const maxLookupBatch = maxFilterValues - 1

// lookupCalls is how many describes one lookup batch may send at once
// (each with as many addresses as one call takes).
const lookupCalls = 5

// The lookup batch's window adapts to the arrivals (docs/architecture.md,
// "One annotation, through the code"): a batch goes out after a pause of
// lookupPause, and while lookups keep coming it stays open up to
// lookupMaxWait, gathering up to lookupCalls describes' worth of
// addresses, so the tag writes their answers lead to share batches too.
const (
	lookupPause   = 100 * time.Millisecond
	lookupMaxWait = 2500 * time.Millisecond
)

// lookupWindow is the lookup batch's window: the reads' window, widened
// to the lookups' own.
func lookupWindow(reads batchWindow) batchWindow {
	return batchWindow{idle: max(reads.idle, lookupPause), maxWait: max(reads.maxWait, lookupMaxWait)}
}

func newDescribeENIsByIPBatcher(c *Client, w batchWindow) *batcher[ipFamily, string, awstypes.ENI] {
	perCall := maxFilterValues
	if c.vpcID != "" {
		perCall = maxLookupBatch
	}
	b := newBatcher(c, batchedCall{kind: "lookup-ip", action: "DescribeNetworkInterfaces", maxItems: lookupCalls * perCall}, lookupWindow(w),
		func(ctx context.Context, family ipFamily, ips []string) (map[string]awstypes.ENI, error) {
			return c.execDescribeENIsByIP(ctx, family, ips, perCall)
		})
	b.missing = func(ip string) error {
		return &notFoundError{code: "InvalidAddress.NotFound", id: "no network interface holds " + ip}
	}
	return b
}

// ipBatchKey returns an address's batch key and its canonical form (an
// IPv4-mapped IPv6 address is looked up as IPv4).
func ipBatchKey(ip string) (ipFamily, string, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "", "", fmt.Errorf("looking up an ENI by IP: %q is not an IP address", ip)
	}
	if a.Is6() && !a.Is4In6() {
		return ipv6, a.String(), nil
	}
	return ipv4, a.Unmap().String(), nil
}

// execDescribeENIsByIP answers each address with the ENI that holds it,
// with a describe per perCall addresses, sent together: the filter
// matches any of an ENI's addresses, so one ENI may answer several of
// them.
func (c *Client) execDescribeENIsByIP(ctx context.Context, family ipFamily, ips []string, perCall int) (map[string]awstypes.ENI, error) {
	chunks := slices.Collect(slices.Chunk(ips, perCall))
	found := make([][]awstypes.ENI, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, chunk := range chunks {
		wg.Go(func() { found[i], errs[i] = c.describeENIs(ctx, []Filter{{Name: string(family), Values: chunk}}, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(ips))
	for _, ip := range ips {
		want[ip] = true
	}
	out := make(map[string]awstypes.ENI, len(ips))
	for _, e := range slices.Concat(found...) {
		for _, ip := range heldAddresses(e, family) {
			if want[ip] {
				out[ip] = e
			}
		}
	}
	return out, nil
}

func heldAddresses(e awstypes.ENI, family ipFamily) []string {
	if family == ipv6 {
		return e.IPv6Addresses
	}
	return append([]string{e.PrimaryIP}, e.SecondaryIPs...)
}
