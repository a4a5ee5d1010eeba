package ec2

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
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

// Message returns EC2's message for err without the transport details
// (request IDs, status codes), so it can go into a status that must not
// change from one identical failure to the next; err.Error() otherwise.
func Message(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	return err.Error()
}
