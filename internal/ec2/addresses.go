package ec2

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Addresses are secondary addresses of one ENI, by family.
type Addresses struct {
	IPv4, IPv6 []string
}

// AssignAddresses assigns secondary IPv4 and IPv6 addresses to an ENI:
// one AssignPrivateIpAddresses and one AssignIpv6Addresses at most.
// Reassignment is never allowed: an address another ENI holds is EC2's
// error, not a move.
func (c *Client) AssignAddresses(ctx context.Context, eniID string, a Addresses) error {
	if len(a.IPv4) > 0 {
		if _, err := c.api.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
			NetworkInterfaceId: aws.String(eniID), PrivateIpAddresses: a.IPv4, AllowReassignment: aws.Bool(false),
		}); err != nil {
			return err
		}
	}
	if len(a.IPv6) > 0 {
		if _, err := c.api.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
			NetworkInterfaceId: aws.String(eniID), Ipv6Addresses: a.IPv6,
		}); err != nil {
			return err
		}
	}
	return nil
}

// UnassignAddresses unassigns secondary IPv4 and IPv6 addresses from an
// ENI: one call per family at most.
func (c *Client) UnassignAddresses(ctx context.Context, eniID string, a Addresses) error {
	if len(a.IPv4) > 0 {
		if _, err := c.api.UnassignPrivateIpAddresses(ctx, &ec2.UnassignPrivateIpAddressesInput{
			NetworkInterfaceId: aws.String(eniID), PrivateIpAddresses: a.IPv4,
		}); err != nil {
			return err
		}
	}
	if len(a.IPv6) > 0 {
		if _, err := c.api.UnassignIpv6Addresses(ctx, &ec2.UnassignIpv6AddressesInput{
			NetworkInterfaceId: aws.String(eniID), Ipv6Addresses: a.IPv6,
		}); err != nil {
			return err
		}
	}
	return nil
}

// AssignAddresses assigns secondary addresses to an ENI and records them
// on it.
func (s *State) AssignAddresses(ctx context.Context, id string, a Addresses) error {
	err := s.client.AssignAddresses(ctx, id, a)
	if err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) {
		e.SecondaryIPs = appendNew(e.SecondaryIPs, a.IPv4)
		e.IPv6Addresses = appendNew(e.IPv6Addresses, a.IPv6)
	})
	return nil
}

// UnassignAddresses unassigns secondary addresses from an ENI and records
// them gone.
func (s *State) UnassignAddresses(ctx context.Context, id string, a Addresses) error {
	if err := s.client.UnassignAddresses(ctx, id, a); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) {
		e.SecondaryIPs = slices.DeleteFunc(slices.Clone(e.SecondaryIPs), func(ip string) bool { return slices.Contains(a.IPv4, ip) })
		e.IPv6Addresses = slices.DeleteFunc(slices.Clone(e.IPv6Addresses), func(ip string) bool { return slices.Contains(a.IPv6, ip) })
	})
	return nil
}

func appendNew(have, add []string) []string {
	out := slices.Clone(have)
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
