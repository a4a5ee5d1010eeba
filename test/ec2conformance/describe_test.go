package ec2conformance

import (
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DescribeSubnets, DescribeSecurityGroups and DescribeVpcs filter by
// tag:Name, vpc-id and their own fields, the way the operator finds
// subnets and groups by name.
func TestDescribeNetworkResources(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{})

	subnets := func(t *testing.T, in *ec2.DescribeSubnetsInput) []string {
		out, err := w.ec2.DescribeSubnets(t.Context(), in)
		noErr(t, err, "DescribeSubnets %s", describeFilters(in.Filters))
		var ids []string
		for _, s := range out.Subnets {
			ids = append(ids, aws.ToString(s.SubnetId))
		}
		slices.Sort(ids)
		return ids
	}
	groups := func(t *testing.T, in *ec2.DescribeSecurityGroupsInput) (ids, names []string) {
		out, err := w.ec2.DescribeSecurityGroups(t.Context(), in)
		noErr(t, err, "DescribeSecurityGroups %s", describeFilters(in.Filters))
		for _, g := range out.SecurityGroups {
			ids = append(ids, aws.ToString(g.GroupId))
			names = append(names, aws.ToString(g.GroupName))
		}
		slices.Sort(ids)
		slices.Sort(names)
		return ids, names
	}
	vpcs := func(t *testing.T, in *ec2.DescribeVpcsInput) []string {
		out, err := w.ec2.DescribeVpcs(t.Context(), in)
		noErr(t, err, "DescribeVpcs %s", describeFilters(in.Filters))
		var ids []string
		for _, v := range out.Vpcs {
			ids = append(ids, aws.ToString(v.VpcId))
		}
		return ids
	}

	t.Run("subnets", func(t *testing.T) {
		for _, c := range []struct {
			name    string
			filters []types.Filter
			want    []string
		}{
			{"vpc-id", []types.Filter{filter("vpc-id", w.vpc)}, sorted(w.a.id, w.b.id)},
			{"tag:Name", []types.Filter{filter("tag:Name", w.name+"-b")}, []string{w.b.id}},
			{"tag:Name wildcard", []types.Filter{filter("tag:Name", w.name+"-?")}, sorted(w.a.id, w.b.id)},
			{"tag:Name and vpc-id", []types.Filter{filter("tag:Name", w.name+"-a", w.name+"-b"), filter("vpc-id", w.vpc)}, sorted(w.a.id, w.b.id)},
			{"availability-zone", []types.Filter{filter("vpc-id", w.vpc), filter("availability-zone", w.a.az)}, []string{w.a.id}},
			{"cidr-block", []types.Filter{filter("vpc-id", w.vpc), filter("cidr-block", w.b.cidr.String())}, []string{w.b.id}},
			{"subnet-id", []types.Filter{filter("subnet-id", w.a.id)}, []string{w.a.id}},
			{"no match", []types.Filter{filter("vpc-id", w.vpc), filter("tag:Name", "nothing-is-called-this")}, nil},
		} {
			if got := subnets(t, &ec2.DescribeSubnetsInput{Filters: c.filters}); !slices.Equal(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
		}
		if got := subnets(t, &ec2.DescribeSubnetsInput{SubnetIds: []string{w.b.id}}); !slices.Equal(got, []string{w.b.id}) {
			t.Errorf("by ID: got %v", got)
		}
		out, err := w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{w.a.id}})
		noErr(t, err, "DescribeSubnets by ID")
		s := out.Subnets[0]
		if aws.ToString(s.VpcId) != w.vpc || aws.ToString(s.CidrBlock) != w.a.cidr.String() || aws.ToString(s.AvailabilityZone) != w.a.az ||
			aws.ToInt32(s.AvailableIpAddressCount) != 256-5 {
			t.Errorf("subnet a: vpc %s cidr %s zone %s free %d; want %s %s %s %d", aws.ToString(s.VpcId), aws.ToString(s.CidrBlock),
				aws.ToString(s.AvailabilityZone), aws.ToInt32(s.AvailableIpAddressCount), w.vpc, w.a.cidr, w.a.az, 256-5)
		}
		_, err = w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
		requireAPIError(t, err, "InvalidSubnetID.NotFound", http.StatusBadRequest)
	})

	t.Run("security groups", func(t *testing.T) {
		ids, names := groups(t, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}})
		// Every VPC comes with its "default" group.
		if want := sorted("default", w.name+"-sg1", w.name+"-sg2"); !slices.Equal(names, want) {
			t.Errorf("groups of the VPC are %v, want %v", names, want)
		}
		if !slices.Contains(ids, w.sg) || !slices.Contains(ids, w.sg2) {
			t.Errorf("group IDs %v lack %s or %s", ids, w.sg, w.sg2)
		}
		if ids, _ := groups(t, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("tag:Name", w.name+"-sg2")}}); !slices.Equal(ids, []string{w.sg2}) {
			t.Errorf("tag:Name matched %v, want [%s]", ids, w.sg2)
		}
		if ids, _ := groups(t, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{filter("vpc-id", w.vpc),
			filter("group-name", w.name+"-sg1")}}); !slices.Equal(ids, []string{w.sg}) {
			t.Errorf("group-name and vpc-id matched %v, want [%s]", ids, w.sg)
		}
		if ids, _ := groups(t, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{w.sg2}}); !slices.Equal(ids, []string{w.sg2}) {
			t.Errorf("by ID: %v", ids)
		}
		_, err := w.ec2.DescribeSecurityGroups(t.Context(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
		requireAPIError(t, err, "InvalidGroup.NotFound", http.StatusBadRequest)
		_, err = w.ec2.CreateSecurityGroup(t.Context(), &ec2.CreateSecurityGroupInput{GroupName: aws.String(w.name + "-sg1"),
			Description: aws.String("again"), VpcId: aws.String(w.vpc)})
		requireAPIError(t, err, "InvalidGroup.Duplicate", http.StatusBadRequest)
	})

	t.Run("vpcs", func(t *testing.T) {
		if got := vpcs(t, &ec2.DescribeVpcsInput{Filters: []types.Filter{filter("tag:Name", w.name)}}); !slices.Equal(got, []string{w.vpc}) {
			t.Errorf("tag:Name matched %v, want [%s]", got, w.vpc)
		}
		if got := vpcs(t, &ec2.DescribeVpcsInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}}); !slices.Equal(got, []string{w.vpc}) {
			t.Errorf("vpc-id matched %v, want [%s]", got, w.vpc)
		}
		if got := vpcs(t, &ec2.DescribeVpcsInput{VpcIds: []string{w.vpc}}); !slices.Equal(got, []string{w.vpc}) {
			t.Errorf("by ID: %v", got)
		}
		_, err := w.ec2.DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{VpcIds: []string{"vpc-0123456789abcdef0"}})
		requireAPIError(t, err, "InvalidVpcID.NotFound", http.StatusBadRequest)
	})
}

// Two VPCs may use the same CIDR: their address spaces are separate, so
// the same private IP can be held once in each.
func TestOverlappingVPCsHaveSeparateAddresses(t *testing.T) {
	t.Parallel()
	w := newWorld(t, suite, worldSpec{})
	vpc, err := w.ec2.CreateVpc(t.Context(), &ec2.CreateVpcInput{CidrBlock: aws.String(w.a.cidr.String()),
		TagSpecifications: tagSpec(types.ResourceTypeVpc, "Name", w.name+"-twin")})
	noErr(t, err, "CreateVpc with the CIDR of another VPC's subnet")
	twin, err := w.ec2.CreateSubnet(t.Context(), &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(w.a.cidr.String()),
		AvailabilityZone: aws.String(w.a.az)})
	noErr(t, err, "CreateSubnet in the twin VPC")

	ip := w.a.cidr.Addr().As4()
	ip[3] = 99
	addr := netipString(ip)
	w.createENI(&ec2.CreateNetworkInterfaceInput{PrivateIpAddress: aws.String(addr)})
	out, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: twin.Subnet.SubnetId, PrivateIpAddress: aws.String(addr)})
	noErr(t, err, "CreateNetworkInterface with %s in the twin VPC %s (VPC %s holds it too)", addr, aws.ToString(vpc.Vpc.VpcId), w.vpc)
	w.own(aws.ToString(out.NetworkInterface.NetworkInterfaceId))
	ids, err := w.eniIDs(filter("addresses.private-ip-address", addr))
	noErr(t, err, "filter by the address")
	if len(ids) != 1 {
		t.Errorf("the address matches %v in VPC %s, want exactly one ENI", ids, w.vpc)
	}
}
