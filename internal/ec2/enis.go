package ec2

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// CreateENIInput describes an ENI to create.
type CreateENIInput struct {
	SubnetID       string
	SecurityGroups []string
	Description    string
	// Tags are applied atomically with the creation (TagSpecifications),
	// so an ENI never exists without its ownership tags.
	Tags map[string]string
	// ClientToken makes the call idempotent: a retry after a lost response
	// returns the ENI the first call created instead of a second one.
	ClientToken string
}

// CreateENI creates an ENI.
func (c *Client) CreateENI(ctx context.Context, in CreateENIInput) (ENI, error) {
	req := &ec2.CreateNetworkInterfaceInput{
		SubnetId:    aws.String(in.SubnetID),
		Groups:      in.SecurityGroups,
		Description: aws.String(in.Description),
	}
	if in.ClientToken != "" {
		req.ClientToken = aws.String(in.ClientToken)
	}
	if len(in.Tags) > 0 {
		req.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeNetworkInterface, Tags: decodeTags(encodeTags(in.Tags))}}
	}
	out, err := c.api.CreateNetworkInterface(ctx, req)
	if err != nil {
		return ENI{}, err
	}
	return fromNetworkInterface(*out.NetworkInterface), nil
}

// AttachENI attaches an ENI at a device index and returns the attachment ID.
func (c *Client) AttachENI(ctx context.Context, eniID, instanceID string, deviceIndex int) (string, error) {
	out, err := c.api.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(eniID), InstanceId: aws.String(instanceID), DeviceIndex: aws.Int32(int32(deviceIndex)),
	})
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

// Subnet is a subnet as the operator sees it.
type Subnet struct {
	ID               string
	VPCID            string
	AvailabilityZone string
	CIDR             string
	Tags             map[string]string
}

// Subnets returns the VPC's subnets matching the filters.
func (c *Client) Subnets(ctx context.Context, filters ...Filter) ([]Subnet, error) {
	in := &ec2.DescribeSubnetsInput{Filters: toFilters(c.scoped(filters))}
	var out []Subnet
	for p := ec2.NewDescribeSubnetsPaginator(c.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range page.Subnets {
			out = append(out, Subnet{ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId),
				AvailabilityZone: aws.ToString(s.AvailabilityZone), CIDR: aws.ToString(s.CidrBlock), Tags: tagMap(s.Tags)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SecurityGroup is a security group as the operator sees it.
type SecurityGroup struct {
	ID    string
	Name  string
	VPCID string
}

// SecurityGroups returns the VPC's security groups matching the filters
// (e.g. group-name), so names resolve within the cluster's VPC only.
func (c *Client) SecurityGroups(ctx context.Context, filters ...Filter) ([]SecurityGroup, error) {
	in := &ec2.DescribeSecurityGroupsInput{Filters: toFilters(c.scoped(filters))}
	var out []SecurityGroup
	for p := ec2.NewDescribeSecurityGroupsPaginator(c.api, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range page.SecurityGroups {
			out = append(out, SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), VPCID: aws.ToString(g.VpcId)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// InstanceTypes caches DescribeInstanceTypes: the limits of a type never
// change, so each type costs one call for the life of the process.
type InstanceTypes struct {
	client *Client
	mu     sync.Mutex
	limits map[string]int
}

// NewInstanceTypes returns an empty cache of instance type ENI limits.
func (c *Client) NewInstanceTypes() *InstanceTypes {
	return &InstanceTypes{client: c, limits: map[string]int{}}
}

// MaxENIs returns how many network interfaces an instance type takes.
func (t *InstanceTypes) MaxENIs(ctx context.Context, instanceType string) (int, error) {
	t.mu.Lock()
	n, ok := t.limits[instanceType]
	t.mu.Unlock()
	if ok {
		return n, nil
	}
	out, err := t.client.api.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(instanceType)}})
	if err != nil {
		return 0, err
	}
	if len(out.InstanceTypes) == 0 || out.InstanceTypes[0].NetworkInfo == nil {
		return 0, fmt.Errorf("instance type %s: EC2 reported no network limits", instanceType)
	}
	n = int(aws.ToInt32(out.InstanceTypes[0].NetworkInfo.MaximumNetworkInterfaces))
	t.mu.Lock()
	t.limits[instanceType] = n
	t.mu.Unlock()
	return n, nil
}
