package ec2

import (
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ENI is a network interface as the operator sees it.
type ENI struct {
	ID               string
	SubnetID         string
	VPCID            string
	AvailabilityZone string
	InterfaceType    string // interface, branch, trunk, ...
	Status           string // available, in-use, ...
	Description      string
	MAC              string
	PrimaryIP        string
	SecondaryIPs     []string
	IPv6Addresses    []string
	IPv4Prefixes     []netip.Prefix
	IPv6Prefixes     []netip.Prefix
	SecurityGroups   []string
	RequesterManaged bool
	Attachment       *Attachment
	Tags             map[string]string
}

// Attachment is an ENI's attachment to an instance.
type Attachment struct {
	ID                  string
	InstanceID          string
	DeviceIndex         int
	Status              string // attaching, attached, detaching
	DeleteOnTermination bool
}

// Instance is an EC2 instance with the ENIs attached to it.
type Instance struct {
	ID               string
	Type             string
	State            string
	AvailabilityZone string
	SubnetID         string
	VPCID            string
	PrivateIP        string
	ENIs             []ENI
	Tags             map[string]string
}

func tagMap(tags []types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func parsePrefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func fromNetworkInterface(n types.NetworkInterface) ENI {
	e := ENI{
		ID: aws.ToString(n.NetworkInterfaceId), SubnetID: aws.ToString(n.SubnetId), VPCID: aws.ToString(n.VpcId),
		AvailabilityZone: aws.ToString(n.AvailabilityZone), InterfaceType: string(n.InterfaceType),
		Status: string(n.Status), Description: aws.ToString(n.Description), MAC: aws.ToString(n.MacAddress),
		PrimaryIP: aws.ToString(n.PrivateIpAddress), RequesterManaged: aws.ToBool(n.RequesterManaged),
		Tags: tagMap(n.TagSet),
	}
	for _, a := range n.PrivateIpAddresses {
		if ip := aws.ToString(a.PrivateIpAddress); ip != "" && !aws.ToBool(a.Primary) {
			e.SecondaryIPs = append(e.SecondaryIPs, ip)
		}
	}
	for _, a := range n.Ipv6Addresses {
		e.IPv6Addresses = append(e.IPv6Addresses, aws.ToString(a.Ipv6Address))
	}
	var v4, v6 []string
	for _, p := range n.Ipv4Prefixes {
		v4 = append(v4, aws.ToString(p.Ipv4Prefix))
	}
	for _, p := range n.Ipv6Prefixes {
		v6 = append(v6, aws.ToString(p.Ipv6Prefix))
	}
	e.IPv4Prefixes, e.IPv6Prefixes = parsePrefixes(v4), parsePrefixes(v6)
	for _, g := range n.Groups {
		e.SecurityGroups = append(e.SecurityGroups, aws.ToString(g.GroupId))
	}
	if a := n.Attachment; a != nil {
		e.Attachment = &Attachment{
			ID: aws.ToString(a.AttachmentId), InstanceID: aws.ToString(a.InstanceId),
			DeviceIndex: int(aws.ToInt32(a.DeviceIndex)), Status: string(a.Status),
			DeleteOnTermination: aws.ToBool(a.DeleteOnTermination),
		}
	}
	return e
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
		e := ENI{
			ID: aws.ToString(n.NetworkInterfaceId), SubnetID: aws.ToString(n.SubnetId), VPCID: aws.ToString(n.VpcId),
			AvailabilityZone: out.AvailabilityZone, InterfaceType: aws.ToString(n.InterfaceType),
			Status: string(n.Status), Description: aws.ToString(n.Description), MAC: aws.ToString(n.MacAddress),
			PrimaryIP: aws.ToString(n.PrivateIpAddress),
		}
		for _, g := range n.Groups {
			e.SecurityGroups = append(e.SecurityGroups, aws.ToString(g.GroupId))
		}
		if a := n.Attachment; a != nil {
			e.Attachment = &Attachment{
				ID: aws.ToString(a.AttachmentId), InstanceID: out.ID, DeviceIndex: int(aws.ToInt32(a.DeviceIndex)),
				Status: string(a.Status), DeleteOnTermination: aws.ToBool(a.DeleteOnTermination),
			}
		}
		out.ENIs = append(out.ENIs, e)
	}
	return out
}
