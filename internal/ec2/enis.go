package ec2

import (
	"context"
	"net/netip"
	"unique"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// pageSize is the most ENIs EC2 returns per DescribeNetworkInterfaces page.
const pageSize = 1000

// LookupByIP finds the ENI holding a private IPv4 (primary or secondary)
// or IPv6 address in the client's VPC. Concurrent lookups share one
// DescribeNetworkInterfaces call of up to 199 addresses. Addresses inside
// delegated prefixes are not found this way; a State refresh finds them.
func (c *Client) LookupByIP(ctx context.Context, ip string) (awstypes.ENI, error) {
	family, addr, err := ipBatchKey(ip)
	if err != nil {
		return awstypes.ENI{}, err
	}
	return c.enisByIP.do(ctx, family, addr)
}

// GetENI returns one ENI by ID; concurrent calls share one request.
func (c *Client) GetENI(ctx context.Context, id string) (awstypes.ENI, error) {
	return c.enisByID.do(ctx, noKey{}, id)
}

// ListENIs returns every ENI of the client's VPC that matches the filters,
// reading pages of 1,000: the cost is pages, not ENIs.
func (c *Client) ListENIs(ctx context.Context, filters ...Filter) ([]awstypes.ENI, error) {
	return c.listENIs(ctx, filters)
}

func (c *Client) listENIs(ctx context.Context, filters []Filter) ([]awstypes.ENI, error) {
	in := &ec2.DescribeNetworkInterfacesInput{Filters: toFilters(c.scoped(filters)), MaxResults: aws.Int32(pageSize)}
	return allPages(ctx, ec2.NewDescribeNetworkInterfacesPaginator(c.api, in), func(page *ec2.DescribeNetworkInterfacesOutput) []awstypes.ENI {
		return convert(page.NetworkInterfaces, fromNetworkInterface)
	})
}

// describeENIs is an unpaginated, filtered DescribeNetworkInterfaces (used
// for batches, whose filters bound the result), following NextToken if
// AWS paginates anyway.
func (c *Client) describeENIs(ctx context.Context, filters []Filter, scoped bool) ([]awstypes.ENI, error) {
	if scoped {
		filters = c.scoped(filters)
	}
	in := &ec2.DescribeNetworkInterfacesInput{Filters: toFilters(filters)}
	var out []awstypes.ENI
	for {
		page, err := c.api.DescribeNetworkInterfaces(ctx, in)
		if err != nil {
			return out, err
		}
		out = append(out, convert(page.NetworkInterfaces, fromNetworkInterface)...)
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// CreateENI creates an ENI.
func (c *Client) CreateENI(ctx context.Context, in awstypes.CreateENIInput) (awstypes.ENI, error) {
	req := &ec2.CreateNetworkInterfaceInput{
		SubnetId:    aws.String(in.SubnetID),
		Groups:      in.SecurityGroups,
		Description: aws.String(in.Description),
	}
	if in.ClientToken != "" {
		req.ClientToken = aws.String(in.ClientToken)
	}
	setCreateSettings(req, in)
	if len(in.Tags) > 0 {
		req.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: sdkTags(in.Tags)}}
	}
	out, err := c.api.CreateNetworkInterface(ctx, req, func(o *ec2.Options) { o.Retryer = c.createRetryer })
	if err != nil {
		return awstypes.ENI{}, err
	}
	return fromNetworkInterface(*out.NetworkInterface), nil
}

// AttachENI attaches an ENI at a device index of a network card and
// returns the attachment ID. Card 0 is sent as no card, as EC2 takes it.
func (c *Client) AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex, networkCard int) (string, error) {
	in := &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(eniID), InstanceId: aws.String(instanceID), DeviceIndex: aws.Int32(int32(deviceIndex)),
	}
	if networkCard > 0 {
		in.NetworkCardIndex = aws.Int32(int32(networkCard))
	}
	out, err := c.api.AttachNetworkInterface(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.AttachmentId), nil
}

// SetDeleteOnTermination sets whether the ENI goes with its instance.
func (c *Client) SetDeleteOnTermination(ctx context.Context, eniID, attachmentID string, value bool) error {
	_, err := c.api.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(eniID),
		Attachment:         &types.NetworkInterfaceAttachmentChanges{AttachmentId: aws.String(attachmentID), DeleteOnTermination: aws.Bool(value)},
	})
	return err
}

// SetSecurityGroups replaces an ENI's security groups in place.
func (c *Client) SetSecurityGroups(ctx context.Context, eniID string, groups []string) error {
	_, err := c.api.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(eniID), Groups: groups,
	})
	return err
}

// SetDescription changes an ENI's description in place.
func (c *Client) SetDescription(ctx context.Context, eniID, description string) error {
	_, err := c.api.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{
		NetworkInterfaceId: aws.String(eniID), Description: &types.AttributeValue{Value: aws.String(description)},
	})
	return err
}

// DetachENI starts detaching; the ENI becomes available asynchronously.
func (c *Client) DetachENI(ctx context.Context, attachmentID string, force bool) error {
	_, err := c.api.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(attachmentID), Force: aws.Bool(force)})
	return err
}

// DeleteENI deletes an available ENI.
func (c *Client) DeleteENI(ctx context.Context, eniID string) error {
	_, err := c.api.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(eniID)})
	return err
}

func fromNetworkInterface(n types.NetworkInterface) awstypes.ENI {
	// The state holds every ENI of the VPC: the strings most ENIs share
	// (subnet, VPC, zone, type, status, description, security groups,
	// tags) are kept once (intern), not once per ENI.
	e := awstypes.ENI{
		ID: aws.ToString(n.NetworkInterfaceId), SubnetID: intern(aws.ToString(n.SubnetId)), VPCID: intern(aws.ToString(n.VpcId)),
		AvailabilityZone: intern(aws.ToString(n.AvailabilityZone)), InterfaceType: intern(string(n.InterfaceType)),
		Status: intern(string(n.Status)), Description: intern(aws.ToString(n.Description)), MAC: aws.ToString(n.MacAddress),
		PrimaryIP: aws.ToString(n.PrivateIpAddress), RequesterManaged: aws.ToBool(n.RequesterManaged),
		SourceDestCheck: n.SourceDestCheck == nil || *n.SourceDestCheck, Tags: tagMap(n.TagSet),
	}
	for _, a := range n.PrivateIpAddresses {
		if ip := aws.ToString(a.PrivateIpAddress); ip != "" && !aws.ToBool(a.Primary) {
			e.SecondaryIPs = append(e.SecondaryIPs, ip)
		}
	}
	for _, a := range n.Ipv6Addresses {
		e.IPv6Addresses = append(e.IPv6Addresses, aws.ToString(a.Ipv6Address))
	}
	for _, p := range n.Ipv4Prefixes {
		e.IPv4Prefixes = appendPrefix(e.IPv4Prefixes, aws.ToString(p.Ipv4Prefix))
	}
	for _, p := range n.Ipv6Prefixes {
		e.IPv6Prefixes = appendPrefix(e.IPv6Prefixes, aws.ToString(p.Ipv6Prefix))
	}
	for _, g := range n.Groups {
		e.SecurityGroups = append(e.SecurityGroups, intern(aws.ToString(g.GroupId)))
	}
	if a := n.Attachment; a != nil {
		e.Attachment = &awstypes.Attachment{
			ID: aws.ToString(a.AttachmentId), InstanceID: aws.ToString(a.InstanceId),
			DeviceIndex: int(aws.ToInt32(a.DeviceIndex)), NetworkCardIndex: int(aws.ToInt32(a.NetworkCardIndex)),
			Status: intern(string(a.Status)), DeleteOnTermination: aws.ToBool(a.DeleteOnTermination),
		}
	}
	return e
}

// intern returns the one copy of s the process keeps (unique.Make):
// equal strings read from many ENIs then cost their bytes once.
func intern(s string) string { return unique.Make(s).Value() }

// appendPrefix skips a prefix EC2 wrote in a form we cannot parse rather
// than failing the whole ENI.
func appendPrefix(out []netip.Prefix, s string) []netip.Prefix {
	if p, err := netip.ParsePrefix(s); err == nil {
		return append(out, p)
	}
	return out
}
