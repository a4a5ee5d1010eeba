package ec2conformance

import (
	"maps"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A badly shaped ID is refused with the Malformed code of its kind before
// anything is looked up.
func TestMalformedIDs(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	eni := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	ctx := t.Context()
	cases := []struct {
		name string
		call func() error
		code string
	}{
		{"DescribeNetworkInterfaces eni-xyz", func() error {
			return errOf(w.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{"eni-xyz"}}))
		}, "InvalidNetworkInterfaceID.Malformed"},
		{"DeleteNetworkInterface too short", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String("eni-123")}))
		}, "InvalidNetworkInterfaceID.Malformed"},
		{"DeleteNetworkInterface wrong prefix", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String("nic-0123456789abcdef0")}))
		}, "InvalidNetworkInterfaceID.Malformed"},
		{"AssignPrivateIpAddresses eni-xyz", func() error {
			_, err := w.ec2.AssignPrivateIpAddresses(ctx, &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String("eni-xyz"),
				SecondaryPrivateIpAddressCount: aws.Int32(1)})
			return err
		}, "InvalidNetworkInterfaceID.Malformed"},
		{"CreateNetworkInterface subnet-xyz", func() error {
			return errOf(w.ec2.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String("subnet-xyz")}))
		}, "InvalidSubnetID.Malformed"},
		{"CreateNetworkInterface sg-xyz", func() error {
			return errOf(w.ec2.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), Groups: []string{"sg-xyz"}}))
		}, "InvalidGroupId.Malformed"},
		{"AttachNetworkInterface i-xyz", func() error {
			_, err := w.ec2.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(eni),
				InstanceId: aws.String("i-xyz"), DeviceIndex: aws.Int32(1)})
			return err
		}, "InvalidInstanceID.Malformed"},
		{"DetachNetworkInterface eni-attach-xyz", func() error {
			return errOf(w.ec2.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String("eni-attach-xyz")}))
		}, "InvalidAttachmentID.Malformed"},
		{"DescribeInstances i-xyz", func() error {
			return errOf(w.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-xyz"}}))
		}, "InvalidInstanceID.Malformed"},
		{"DescribeSubnets subnet-xyz", func() error {
			return errOf(w.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-xyz"}}))
		}, "InvalidSubnetID.Malformed"},
		{"DescribeVpcs vpc-xyz", func() error {
			return errOf(w.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{"vpc-xyz"}}))
		}, "InvalidVpcID.Malformed"},
		{"DescribeSecurityGroups sg-xyz", func() error {
			return errOf(w.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-xyz"}}))
		}, "InvalidGroupId.Malformed"},
		{"CreateSubnet vpc-xyz", func() error {
			return errOf(w.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String("vpc-xyz"), CidrBlock: aws.String("10.1.0.0/24")}))
		}, "InvalidVpcID.Malformed"},
		{"ModifyNetworkInterfaceAttribute sg-xyz", func() error {
			_, err := w.ec2.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: aws.String(eni),
				Groups: []string{"sg-xyz"}})
			return err
		}, "InvalidGroupId.Malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireAPIError(t, c.call(), c.code, http.StatusBadRequest)
		})
	}
}

// DryRun answers DryRunOperation (HTTP 412) when the call would have
// succeeded, and changes nothing, on mutating and Describe actions alike.
// (AssignPrivateIpAddresses and UnassignPrivateIpAddresses have no DryRun.)
func TestDryRun(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	inst := w.instances[0]
	free := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("free"),
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "k", "v")}).NetworkInterfaceId)
	att := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	attachment := w.attach(att, inst, 1)
	ctx, yes := t.Context(), aws.Bool(true)

	countENIs := func(t *testing.T) int { ids, err := w.eniIDs(); noErr(t, err, "listing ENIs"); return len(ids) }
	countInstances := func(t *testing.T) int {
		out, err := w.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}})
		noErr(t, err, "listing instances")
		return len(out.Reservations)
	}
	enis, instances := countENIs(t), countInstances(t)

	cases := []struct {
		name  string
		call  func() error
		check func(t *testing.T, w *world) // no effect
	}{
		{"CreateNetworkInterface", func() error {
			return errOf(w.ec2.CreateNetworkInterface(ctx, &ec2.CreateNetworkInterfaceInput{DryRun: yes, SubnetId: aws.String(w.a.id)}))
		}, func(t *testing.T, w *world) {
			if n := countENIs(t); n != enis {
				t.Errorf("%d ENIs, had %d", n, enis)
			}
		}},
		{"DeleteNetworkInterface", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{DryRun: yes, NetworkInterfaceId: aws.String(free)}))
		}, func(t *testing.T, w *world) { w.eni(free) }},
		{"AttachNetworkInterface", func() error {
			_, err := w.ec2.AttachNetworkInterface(ctx, &ec2.AttachNetworkInterfaceInput{DryRun: yes, NetworkInterfaceId: aws.String(free),
				InstanceId: aws.String(inst), DeviceIndex: aws.Int32(2)})
			return err
		}, func(t *testing.T, w *world) {
			if n := w.eni(free); n.Attachment != nil {
				t.Errorf("attached: %+v", n.Attachment)
			}
		}},
		{"DetachNetworkInterface", func() error {
			return errOf(w.ec2.DetachNetworkInterface(ctx, &ec2.DetachNetworkInterfaceInput{DryRun: yes, AttachmentId: aws.String(attachment)}))
		}, func(t *testing.T, w *world) {
			if a := w.eni(att).Attachment; a == nil || a.Status != types.AttachmentStatusAttached {
				t.Errorf("attachment %+v, want attached", a)
			}
		}},
		{"ModifyNetworkInterfaceAttribute", func() error {
			_, err := w.ec2.ModifyNetworkInterfaceAttribute(ctx, &ec2.ModifyNetworkInterfaceAttributeInput{DryRun: yes,
				NetworkInterfaceId: aws.String(free), Description: &types.AttributeValue{Value: aws.String("changed")}})
			return err
		}, func(t *testing.T, w *world) {
			if d := aws.ToString(w.eni(free).Description); d != "free" {
				t.Errorf("description %q", d)
			}
		}},
		{"CreateTags", func() error {
			return errOf(w.ec2.CreateTags(ctx, &ec2.CreateTagsInput{DryRun: yes, Resources: []string{free}, Tags: tags("new", "tag")}))
		}, func(t *testing.T, w *world) {
			if got := w.tagsOf(free); !maps.Equal(got, map[string]string{"k": "v"}) {
				t.Errorf("tags %v", got)
			}
		}},
		{"DeleteTags", func() error {
			return errOf(w.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{DryRun: yes, Resources: []string{free}, Tags: []types.Tag{{Key: aws.String("k")}}}))
		}, func(t *testing.T, w *world) {
			if got := w.tagsOf(free); !maps.Equal(got, map[string]string{"k": "v"}) {
				t.Errorf("tags %v", got)
			}
		}},
		{"RunInstances", func() error {
			_, err := w.ec2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: yes, ImageId: aws.String(imageID()), InstanceType: types.InstanceType(smallType),
				MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(w.a.id)})
			return err
		}, func(t *testing.T, w *world) {
			if n := countInstances(t); n != instances {
				t.Errorf("%d instances, had %d", n, instances)
			}
		}},
		{"TerminateInstances", func() error {
			return errOf(w.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{DryRun: yes, InstanceIds: []string{inst}}))
		}, func(t *testing.T, w *world) {
			if s := w.instance(inst).State.Name; s != types.InstanceStateNameRunning {
				t.Errorf("instance is %s", s)
			}
		}},
		{"CreateVpc", func() error {
			_, err := w.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{DryRun: yes, CidrBlock: aws.String("10.9.0.0/16"),
				TagSpecifications: tagSpec(types.ResourceTypeVpc, "Name", w.name+"-dry")})
			return err
		}, func(t *testing.T, w *world) {
			out, err := w.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{filter("tag:Name", w.name+"-dry")}})
			noErr(t, err, "DescribeVpcs")
			if len(out.Vpcs) != 0 {
				t.Errorf("a VPC was created: %v", out.Vpcs)
			}
		}},
		{"CreateSubnet", func() error {
			free := w.a.cidr.Addr().As4()
			free[2] += 3 // a /24 of the world's block no subnet uses
			_, err := w.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{DryRun: yes, VpcId: aws.String(w.vpc), CidrBlock: aws.String(netipString(free) + "/24")})
			return err
		}, nil},
		{"CreateSecurityGroup", func() error {
			_, err := w.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{DryRun: yes, VpcId: aws.String(w.vpc),
				GroupName: aws.String(w.name + "-dry"), Description: aws.String("dry")})
			return err
		}, nil},
		{"DescribeNetworkInterfaces", func() error {
			return errOf(w.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{DryRun: yes}))
		}, nil},
		{"DescribeInstances", func() error { return errOf(w.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{DryRun: yes})) }, nil},
		{"DescribeInstanceTypes", func() error {
			return errOf(w.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{DryRun: yes}))
		}, nil},
		{"DescribeSubnets", func() error { return errOf(w.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{DryRun: yes})) }, nil},
		{"DescribeSecurityGroups", func() error {
			return errOf(w.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{DryRun: yes}))
		}, nil},
		{"DescribeVpcs", func() error { return errOf(w.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{DryRun: yes})) }, nil},
		{"DescribeTags", func() error { return errOf(w.ec2.DescribeTags(ctx, &ec2.DescribeTagsInput{DryRun: yes})) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			requireAPIError(t, err, "DryRunOperation", http.StatusPreconditionFailed)
			if c.check != nil {
				c.check(t, w.in(t))
			}
		})
	}
}
