package ec2conformance

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// create makes the resources of wd through the EC2 API in the order the
// emulator's Load does (VPCs, subnets, security groups, instances, ENIs),
// resolving a reference by the Name of an entry created before it, else
// taking it as an ID; it returns the IDs as Load's result lists them. So
// one emulator.World can be loaded into the emulator or created on any EC2
// endpoint. Its instances are terminated and its ENIs deleted when t ends.
func create(t *testing.T, c *ec2.Client, wd emulator.World) emulator.LoadResult {
	t.Helper()
	if bad := unrealisable(wd); len(bad) > 0 {
		t.Fatalf("this World cannot be created through the EC2 API, which has no equivalent of %s", strings.Join(bad, ", "))
	}
	r := &realiser{t: t, c: c, ids: map[string]string{}, ipv6: map[string]netip.Prefix{}}
	t.Cleanup(r.cleanup)
	r.vpcs(wd.VPCs)
	r.subnets(wd.Subnets)
	r.groups(wd.SecurityGroups)
	r.instances(wd.Instances)
	r.enis(wd.NetworkInterfaces)
	return r.res
}

// unrealisable lists the World fields set that the EC2 API has no
// equivalent of: instance types are EC2's own catalogue, and EC2 picks
// every ID itself.
func unrealisable(wd emulator.World) []string {
	var bad []string
	if len(wd.InstanceTypes) > 0 {
		bad = append(bad, "instanceTypes")
	}
	withID := func(field string, ids []string) {
		for i, id := range ids {
			if id != "" {
				bad = append(bad, fmt.Sprintf("%s[%d].id", field, i))
			}
		}
	}
	withID("vpcs", idsOf(wd.VPCs, func(v emulator.VPCSpec) string { return v.ID }))
	withID("subnets", idsOf(wd.Subnets, func(s emulator.SubnetSpec) string { return s.ID }))
	withID("securityGroups", idsOf(wd.SecurityGroups, func(g emulator.SecurityGroupSpec) string { return g.ID }))
	withID("instances", idsOf(wd.Instances, func(i emulator.InstanceSpec) string { return i.ID }))
	withID("networkInterfaces", idsOf(wd.NetworkInterfaces, func(n emulator.NetworkInterfaceSpec) string { return n.ID }))
	return bad
}

func idsOf[S any](list []S, id func(S) string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = id(s)
	}
	return out
}

// realiser is one create: the IDs it got by Name, the VPCs' IPv6 blocks
// and what it made.
type realiser struct {
	t    *testing.T
	c    *ec2.Client
	ids  map[string]string       // Name -> ID
	ipv6 map[string]netip.Prefix // VPC ID -> its Amazon-provided block
	res  emulator.LoadResult
}

func (r *realiser) ref(s string) string {
	if id, ok := r.ids[s]; ok {
		return id
	}
	return s
}

func (r *realiser) refs(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = r.ref(s)
	}
	return out
}

func (r *realiser) name(name, id string) {
	if name != "" {
		r.ids[name] = id
	}
}

// cleanup terminates the instances, then deletes the ENIs, ignoring errors.
func (r *realiser) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var instances, enis []string
	for _, i := range r.res.Instances {
		instances = append(instances, i.ID)
	}
	for _, n := range r.res.NetworkInterfaces {
		enis = append(enis, n.ID)
	}
	release(ctx, r.c, instances, enis)
}

// specTags is a TagSpecification of a spec's tags and, when name is not
// empty, its Name tag, as Load tags what it makes.
func specTags(rt types.ResourceType, tm map[string]string, name string) []types.TagSpecification {
	tm = maps.Clone(tm)
	if name != "" {
		if tm == nil {
			tm = map[string]string{}
		}
		tm["Name"] = name
	}
	if len(tm) == 0 {
		return nil
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(tm)) {
		kv = append(kv, k, tm[k])
	}
	return tagSpec(rt, kv...)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

func optionalCount(n int) *int32 {
	if n == 0 {
		return nil
	}
	return aws.Int32(int32(n))
}

func (r *realiser) vpcs(specs []emulator.VPCSpec) {
	for i, v := range specs {
		in := &ec2.CreateVpcInput{CidrBlock: aws.String(v.CIDR), TagSpecifications: specTags(types.ResourceTypeVpc, v.Tags, v.Name)}
		if v.AmazonProvidedIPv6 {
			in.AmazonProvidedIpv6CidrBlock = aws.Bool(true)
		}
		out, err := r.c.CreateVpc(r.t.Context(), in)
		noErr(r.t, err, "vpcs[%d]: CreateVpc %s", i, v.CIDR)
		id := aws.ToString(out.Vpc.VpcId)
		for _, cidr := range v.SecondaryCIDRs {
			_, err := r.c.AssociateVpcCidrBlock(r.t.Context(), &ec2.AssociateVpcCidrBlockInput{VpcId: aws.String(id), CidrBlock: aws.String(cidr)})
			noErr(r.t, err, "vpcs[%d]: AssociateVpcCidrBlock %s", i, cidr)
		}
		if v.AmazonProvidedIPv6 || len(v.SecondaryCIDRs) > 0 {
			r.ipv6[id] = r.awaitBlocks(id, v)
		}
		r.name(v.Name, id)
		r.res.VPCs = append(r.res.VPCs, id)
	}
}

// awaitBlocks waits until the VPC's further blocks are associated (subnets
// cannot use them before) and returns its IPv6 block, if it asked for one.
func (r *realiser) awaitBlocks(id string, v emulator.VPCSpec) netip.Prefix {
	var block netip.Prefix
	waitFor(r.t, time.Minute, "the CIDR blocks of VPC "+id, func() (bool, error) {
		out, err := r.c.DescribeVpcs(r.t.Context(), &ec2.DescribeVpcsInput{VpcIds: []string{id}})
		if err != nil || len(out.Vpcs) != 1 {
			return false, err
		}
		associated := map[string]bool{}
		for _, a := range out.Vpcs[0].CidrBlockAssociationSet {
			associated[aws.ToString(a.CidrBlock)] = a.CidrBlockState != nil && a.CidrBlockState.State == types.VpcCidrBlockStateCodeAssociated
		}
		for _, a := range out.Vpcs[0].Ipv6CidrBlockAssociationSet {
			if a.Ipv6CidrBlockState != nil && a.Ipv6CidrBlockState.State == types.VpcCidrBlockStateCodeAssociated {
				block, err = netip.ParsePrefix(aws.ToString(a.Ipv6CidrBlock))
			}
		}
		ok := !v.AmazonProvidedIPv6 || block.IsValid()
		for _, c := range v.SecondaryCIDRs {
			ok = ok && associated[c]
		}
		return ok, err
	})
	return block
}

func (r *realiser) subnets(specs []emulator.SubnetSpec) {
	for i, s := range specs {
		vpc := r.ref(s.VPC)
		ipv6, err := s.IPv6CIDRIn(r.ipv6[vpc])
		noErr(r.t, err, "subnets[%d]", i)
		out, err := r.c.CreateSubnet(r.t.Context(), &ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String(s.CIDR),
			Ipv6CidrBlock: optional(ipv6), AvailabilityZone: optional(s.AvailabilityZone),
			TagSpecifications: specTags(types.ResourceTypeSubnet, s.Tags, s.Name)})
		noErr(r.t, err, "subnets[%d]: CreateSubnet %s", i, s.CIDR)
		id := aws.ToString(out.Subnet.SubnetId)
		r.name(s.Name, id)
		r.res.Subnets = append(r.res.Subnets, id)
	}
}

// groups creates the security groups. EC2 requires a description, which a
// World may leave empty: the group's name stands in for it then.
func (r *realiser) groups(specs []emulator.SecurityGroupSpec) {
	for i, g := range specs {
		out, err := r.c.CreateSecurityGroup(r.t.Context(), &ec2.CreateSecurityGroupInput{GroupName: aws.String(g.Name),
			Description: aws.String(firstNonEmpty(g.Description, g.Name)), VpcId: aws.String(r.ref(g.VPC)),
			TagSpecifications: specTags(types.ResourceTypeSecurityGroup, g.Tags, "")})
		noErr(r.t, err, "securityGroups[%d]: CreateSecurityGroup %s", i, g.Name)
		id := aws.ToString(out.GroupId)
		r.name(g.Name, id)
		r.res.SecurityGroups = append(r.res.SecurityGroups, id)
	}
}

func (r *realiser) instances(specs []emulator.InstanceSpec) {
	for i, s := range specs {
		out, err := r.c.RunInstances(r.t.Context(), &ec2.RunInstancesInput{ImageId: aws.String(imageID()),
			InstanceType: types.InstanceType(s.Type), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			SubnetId: aws.String(r.ref(s.Subnet)), SecurityGroupIds: r.refs(s.SecurityGroups), PrivateIpAddress: optional(s.PrivateIP),
			TagSpecifications: specTags(types.ResourceTypeInstance, s.Tags, s.Name)})
		noErr(r.t, err, "instances[%d]: RunInstances %s", i, s.Type)
		if len(out.Instances) != 1 {
			r.t.Fatalf("instances[%d]: RunInstances returned %d instances, want 1", i, len(out.Instances))
		}
		inst := out.Instances[0]
		loaded := emulator.LoadedInstance{ID: aws.ToString(inst.InstanceId), PrivateIP: aws.ToString(inst.PrivateIpAddress)}
		r.res.Instances = append(r.res.Instances, loaded) // before any other call, for cleanup
		for _, n := range inst.NetworkInterfaces {
			if n.Attachment != nil && aws.ToInt32(n.Attachment.DeviceIndex) == 0 {
				loaded.PrimaryENI, loaded.MAC = aws.ToString(n.NetworkInterfaceId), aws.ToString(n.MacAddress)
			}
		}
		// EC2 takes addresses or a count in one call, not both.
		if len(s.SecondaryIPs) > 0 {
			loaded.SecondaryIPs = r.assign(loaded.PrimaryENI, &ec2.AssignPrivateIpAddressesInput{PrivateIpAddresses: s.SecondaryIPs})
		}
		if s.SecondaryIPCount > 0 {
			loaded.SecondaryIPs = append(loaded.SecondaryIPs,
				r.assign(loaded.PrimaryENI, &ec2.AssignPrivateIpAddressesInput{SecondaryPrivateIpAddressCount: optionalCount(s.SecondaryIPCount)})...)
		}
		r.name(s.Name, loaded.ID)
		r.res.Instances[len(r.res.Instances)-1] = loaded
	}
}

// assign assigns secondary addresses to an ENI and returns them.
func (r *realiser) assign(eni string, in *ec2.AssignPrivateIpAddressesInput) []string {
	in.NetworkInterfaceId = aws.String(eni)
	out, err := r.c.AssignPrivateIpAddresses(r.t.Context(), in)
	noErr(r.t, err, "AssignPrivateIpAddresses to %s", eni)
	var ips []string
	for _, a := range out.AssignedPrivateIpAddresses {
		ips = append(ips, aws.ToString(a.PrivateIpAddress))
	}
	return ips
}

func (r *realiser) enis(specs []emulator.NetworkInterfaceSpec) {
	for i, s := range specs {
		count := max(s.Count, 1)
		if count > 1 && (s.PrivateIP != "" || len(s.SecondaryIPs) > 0 || s.Instance != "") {
			r.t.Fatalf("networkInterfaces[%d]: count > 1 cannot be combined with privateIp, secondaryIps or instanceId", i)
		}
		for range count {
			r.eni(i, s)
		}
	}
}

// eni creates one ENI in one call, as Load does (EC2 refuses some
// combinations the emulator takes: its error fails the test), and attaches it.
func (r *realiser) eni(i int, s emulator.NetworkInterfaceSpec) {
	in := &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(r.ref(s.Subnet)), Description: optional(s.Description),
		Groups: r.refs(s.SecurityGroups), PrivateIpAddress: optional(s.PrivateIP),
		SecondaryPrivateIpAddressCount: optionalCount(s.SecondaryIPCount), Ipv4PrefixCount: optionalCount(s.IPv4PrefixCount),
		TagSpecifications: specTags(types.ResourceTypeNetworkInterface, s.Tags, "")}
	if s.InterfaceType != "" && s.InterfaceType != "interface" {
		in.InterfaceType = types.NetworkInterfaceCreationType(s.InterfaceType)
	}
	for _, ip := range s.SecondaryIPs {
		in.PrivateIpAddresses = append(in.PrivateIpAddresses, types.PrivateIpAddressSpecification{PrivateIpAddress: aws.String(ip), Primary: aws.Bool(false)})
	}
	for _, ip := range s.IPv6Addresses {
		in.Ipv6Addresses = append(in.Ipv6Addresses, types.InstanceIpv6Address{Ipv6Address: aws.String(ip)})
	}
	for _, p := range s.IPv4Prefixes {
		in.Ipv4Prefixes = append(in.Ipv4Prefixes, types.Ipv4PrefixSpecificationRequest{Ipv4Prefix: aws.String(p)})
	}
	out, err := r.c.CreateNetworkInterface(r.t.Context(), in)
	noErr(r.t, err, "networkInterfaces[%d]: CreateNetworkInterface in %s", i, s.Subnet)
	n := out.NetworkInterface
	primary, secondary := ipsOf(*n)
	loaded := emulator.LoadedENI{ID: aws.ToString(n.NetworkInterfaceId), PrivateIP: primary, SecondaryIPs: secondary, MAC: aws.ToString(n.MacAddress)}
	r.res.NetworkInterfaces = append(r.res.NetworkInterfaces, loaded)
	if s.Instance == "" {
		return
	}
	loaded.Instance = r.ref(s.Instance)
	att, err := r.c.AttachNetworkInterface(r.t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(loaded.ID),
		InstanceId: aws.String(loaded.Instance), DeviceIndex: aws.Int32(int32(s.DeviceIndex))})
	noErr(r.t, err, "networkInterfaces[%d]: AttachNetworkInterface %s to %s", i, loaded.ID, loaded.Instance)
	if s.DeleteOnTermination {
		_, err := r.c.ModifyNetworkInterfaceAttribute(r.t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: aws.String(loaded.ID),
			Attachment: &types.NetworkInterfaceAttachmentChanges{AttachmentId: att.AttachmentId, DeleteOnTermination: aws.Bool(true)}})
		noErr(r.t, err, "networkInterfaces[%d]: ModifyNetworkInterfaceAttribute %s (DeleteOnTermination)", i, loaded.ID)
	}
	r.res.NetworkInterfaces[len(r.res.NetworkInterfaces)-1] = loaded
}
