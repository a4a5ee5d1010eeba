package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// setCreateSettings puts a create's address counts and interface type on
// the request. Zero counts and the plain interface type are left out:
// EC2 refuses some combinations even of zeros (a count beside prefixes),
// and a request without them is the one earlier versions sent, so the
// ClientToken of an ENI they created still matches.
func setCreateSettings(req *ec2.CreateNetworkInterfaceInput, in awstypes.CreateENIInput) {
	count := func(n int) *int32 {
		if n <= 0 {
			return nil
		}
		return aws.Int32(int32(n))
	}
	req.SecondaryPrivateIpAddressCount = count(in.SecondaryIPv4Count)
	req.Ipv4PrefixCount = count(in.IPv4PrefixCount)
	req.Ipv6AddressCount = count(in.IPv6AddressCount)
	req.Ipv6PrefixCount = count(in.IPv6PrefixCount)
	if in.InterfaceType != "" && in.InterfaceType != "interface" {
		req.InterfaceType = types.NetworkInterfaceCreationType(in.InterfaceType)
	}
}

// SetSourceDestCheck turns an ENI's source/destination check on or off.
func (c *Client) SetSourceDestCheck(ctx context.Context, eniID string, value bool) error {
	_, err := c.api.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(eniID), SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(value)},
	})
	return err
}

// AssignPrivateIPs has EC2 assign count more secondary private IPv4
// addresses to an ENI, and returns them.
func (c *Client) AssignPrivateIPs(ctx context.Context, eniID string, count int) ([]string, error) {
	out, err := c.api.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eniID), SecondaryPrivateIpAddressCount: aws.Int32(int32(count)),
	})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, a := range out.AssignedPrivateIpAddresses {
		ips = append(ips, aws.ToString(a.PrivateIpAddress))
	}
	return ips, nil
}

// SetSourceDestCheck turns an ENI's source/destination check on or off
// and records it.
func (s *State) SetSourceDestCheck(ctx context.Context, id string, value bool) error {
	if err := s.client.SetSourceDestCheck(ctx, id, value); err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) { e.SourceDestCheck = value })
	return nil
}

// AssignPrivateIPs has EC2 assign count more secondary private IPv4
// addresses to an ENI and records them.
func (s *State) AssignPrivateIPs(ctx context.Context, id string, count int) error {
	ips, err := s.client.AssignPrivateIPs(ctx, id, count)
	if err != nil {
		return err
	}
	s.update(id, func(e *awstypes.ENI) { e.SecondaryIPs = append(append([]string(nil), e.SecondaryIPs...), ips...) })
	return nil
}
