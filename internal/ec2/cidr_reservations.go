package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// SubnetCIDRReservation is a range of a subnet that EC2 never assigns
// automatically (Type "explicit") or delegates only as prefixes
// (Type "prefix").
type SubnetCIDRReservation struct {
	ID, SubnetID, CIDR, Type, Description string
	Tags                                  map[string]string
}

// CreateSubnetCIDRReservation reserves cidr of a subnet as an explicit
// reservation, with its tags set atomically: EC2 then assigns its
// addresses only when they are named.
func (c *Client) CreateSubnetCIDRReservation(ctx context.Context, subnetID, cidr, description string, tags map[string]string) (SubnetCIDRReservation, error) {
	in := &ec2.CreateSubnetCidrReservationInput{SubnetId: aws.String(subnetID), Cidr: aws.String(cidr),
		ReservationType: types.SubnetCidrReservationTypeExplicit}
	if description != "" {
		in.Description = aws.String(description)
	}
	if len(tags) > 0 {
		in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeSubnetCidrReservation, Tags: sdkTags(tags)}}
	}
	out, err := c.api.CreateSubnetCidrReservation(ctx, in)
	if err != nil {
		return SubnetCIDRReservation{}, err
	}
	if out.SubnetCidrReservation == nil {
		return SubnetCIDRReservation{SubnetID: subnetID, CIDR: cidr, Type: string(types.SubnetCidrReservationTypeExplicit),
			Description: description, Tags: tags}, nil
	}
	return fromCIDRReservation(*out.SubnetCidrReservation), nil
}

// ListSubnetCIDRReservations returns a subnet's reservations, IPv4 ones
// first, following NextToken.
func (c *Client) ListSubnetCIDRReservations(ctx context.Context, subnetID string) ([]SubnetCIDRReservation, error) {
	in := &ec2.GetSubnetCidrReservationsInput{SubnetId: aws.String(subnetID)}
	var out []SubnetCIDRReservation
	for {
		page, err := c.api.GetSubnetCidrReservations(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, convert(page.SubnetIpv4CidrReservations, fromCIDRReservation)...)
		out = append(out, convert(page.SubnetIpv6CidrReservations, fromCIDRReservation)...)
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// DeleteSubnetCIDRReservation deletes a reservation; its addresses
// become available to automatic assignment again.
func (c *Client) DeleteSubnetCIDRReservation(ctx context.Context, id string) error {
	_, err := c.api.DeleteSubnetCidrReservation(ctx, &ec2.DeleteSubnetCidrReservationInput{SubnetCidrReservationId: aws.String(id)})
	return err
}

func fromCIDRReservation(r types.SubnetCidrReservation) SubnetCIDRReservation {
	return SubnetCIDRReservation{ID: aws.ToString(r.SubnetCidrReservationId), SubnetID: aws.ToString(r.SubnetId),
		CIDR: aws.ToString(r.Cidr), Type: string(r.ReservationType), Description: aws.ToString(r.Description), Tags: tagMap(r.Tags)}
}
