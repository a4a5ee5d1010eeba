package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Instance is an EC2 instance with the ENIs attached to it.
type Instance struct {
	ID               string
	Type             string
	State            string
	AvailabilityZone string
	SubnetID         string
	VPCID            string
	PrivateIP        string
	ENIs             []awstypes.ENI
	Tags             map[string]string
}

// GetInstance returns one instance by ID; concurrent calls share one request.
func (c *Client) GetInstance(ctx context.Context, id string) (Instance, error) {
	return c.instancesByID.do(ctx, noKey{}, id)
}

func fromInstance(i types.Instance) Instance {
	out := Instance{
		ID: aws.ToString(i.InstanceId), Type: string(i.InstanceType), SubnetID: aws.ToString(i.SubnetId),
		VPCID: aws.ToString(i.VpcId), PrivateIP: aws.ToString(i.PrivateIpAddress), Tags: tagMap(i.Tags),
	}
	if i.State != nil {
		out.State = string(i.State.Name)
	}
	if i.Placement != nil {
		out.AvailabilityZone = aws.ToString(i.Placement.AvailabilityZone)
	}
	for _, n := range i.NetworkInterfaces {
		out.ENIs = append(out.ENIs, fromInstanceNetworkInterface(n, out))
	}
	return out
}

// fromInstanceNetworkInterface converts the shorter view of an ENI that
// DescribeInstances gives; the zone and instance are the instance's.
func fromInstanceNetworkInterface(n types.InstanceNetworkInterface, inst Instance) awstypes.ENI {
	e := awstypes.ENI{
		ID: aws.ToString(n.NetworkInterfaceId), SubnetID: aws.ToString(n.SubnetId), VPCID: aws.ToString(n.VpcId),
		AvailabilityZone: inst.AvailabilityZone, InterfaceType: aws.ToString(n.InterfaceType),
		Status: string(n.Status), Description: aws.ToString(n.Description), MAC: aws.ToString(n.MacAddress),
		PrimaryIP: aws.ToString(n.PrivateIpAddress), SourceDestCheck: n.SourceDestCheck == nil || *n.SourceDestCheck,
	}
	for _, g := range n.Groups {
		e.SecurityGroups = append(e.SecurityGroups, aws.ToString(g.GroupId))
	}
	if a := n.Attachment; a != nil {
		e.Attachment = &awstypes.Attachment{
			ID: aws.ToString(a.AttachmentId), InstanceID: inst.ID, DeviceIndex: int(aws.ToInt32(a.DeviceIndex)),
			NetworkCardIndex: int(aws.ToInt32(a.NetworkCardIndex)), Status: string(a.Status), DeleteOnTermination: aws.ToBool(a.DeleteOnTermination),
		}
	}
	return e
}
