package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

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
