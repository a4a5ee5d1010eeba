package ec2

import (
	"context"
	"fmt"
	"net/netip"
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

func newDescribeENIsByIPBatcher(c *Client, w batchWindow) *batcher[ipFamily, string, ENI] {
	maxItems := maxFilterValues
	if c.vpcID != "" {
		maxItems = maxLookupBatch
	}
	b := newBatcher(c, "lookup-ip", "DescribeNetworkInterfaces", w, maxItems, c.execDescribeENIsByIP)
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

// execDescribeENIsByIP answers each address with the ENI that holds it:
// the filter matches any of an ENI's addresses, so one ENI may answer
// several of them.
func (c *Client) execDescribeENIsByIP(ctx context.Context, family ipFamily, ips []string) (map[string]ENI, error) {
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
		for _, ip := range heldAddresses(e, family) {
			if want[ip] {
				out[ip] = e
			}
		}
	}
	return out, nil
}

func heldAddresses(e ENI, family ipFamily) []string {
	if family == ipv6 {
		return e.IPv6Addresses
	}
	return append([]string{e.PrimaryIP}, e.SecondaryIPs...)
}
