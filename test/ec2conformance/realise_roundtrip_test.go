package ec2conformance

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// A World created through the EC2 API (create) is the world the emulator's
// Load makes of it: described through the SDK, both have the same names,
// CIDRs, zones, IPv6 blocks (within their VPC's), group memberships,
// attachments, addresses and tags.
func TestCreateMatchesLoad(t *testing.T) {
	t.Parallel() // adds to the world, changes no configuration
	admin := requireAdmin(t, suite)
	second := 2
	tests := map[string]emulator.World{
		"testenv.DefaultWorld": testenv.DefaultWorld(testenv.WithNodes(3, largeType), testenv.WithSecurityGroups("web"), testenv.WithOtherVPC(),
			testenv.WithENIs(testenv.BranchENIs(2, map[string]string{"Owner": "roundtrip"}),
				emulator.NetworkInterfaceSpec{Subnet: "multus-a", SecurityGroups: []string{"web"}, Description: "multus",
					Instance: "node-0", DeviceIndex: 1, DeleteOnTermination: true, SecondaryIPCount: 2},
				emulator.NetworkInterfaceSpec{Subnet: "storage-b", SecondaryIPs: []string{"10.0.80.9"}, Description: "explicit"}),
			func(w *emulator.World) { w.VPCs[0].AmazonProvidedIPv6, w.Subnets[0].IPv6CIDRIndex = true, &second }),
		"hack/demo/world.json": readWorld(t, "../../hack/demo/world.json"),
	}
	for name, wd := range tests {
		t.Run(name, func(t *testing.T) {
			wd = inRegion(wd, suite.region)
			c := suite.client()
			created := create(t, c, wd)
			loaded, err := admin.Load(t.Context(), wd)
			noErr(t, err, "loading %s", name)
			t.Cleanup((&realiser{c: c, res: loaded}).cleanup) // releases what Load made too
			got, want := census(t, c, created), census(t, c, loaded)
			if !slices.Equal(got, want) {
				t.Errorf("created through the EC2 API:\n\t%s\nloaded:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
			if len(got) < len(wd.VPCs)+len(wd.Subnets)+len(wd.SecurityGroups)+2*len(wd.Instances) {
				t.Errorf("the census lists only %v", got)
			}
		})
	}
}

// What the EC2 API cannot create is named, not skipped.
func TestCreateRefusesWhatEC2CannotCreate(t *testing.T) {
	wd := emulator.World{InstanceTypes: []emulator.InstanceTypeSpec{{Name: "x1.tiny", MaximumNetworkInterfaces: 1}},
		VPCs:              []emulator.VPCSpec{{CIDR: "10.0.0.0/16"}, {ID: "vpc-0123456789abcdef0", CIDR: "10.1.0.0/16"}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{ID: "eni-0123456789abcdef0", Subnet: "s"}}}
	want := []string{"instanceTypes", "vpcs[1].id", "networkInterfaces[0].id"}
	if got := unrealisable(wd); !slices.Equal(got, want) {
		t.Errorf("unrealisable = %v, want %v", got, want)
	}
	if got := unrealisable(testenv.DefaultWorld(testenv.WithNodes(2, largeType))); len(got) != 0 {
		t.Errorf("unrealisable(DefaultWorld) = %v, want none", got)
	}
}

// readWorld decodes a World file as the sandbox does: no unknown field.
func readWorld(t *testing.T, path string) emulator.World {
	t.Helper()
	b, err := os.ReadFile(path)
	noErr(t, err, "reading %s", path)
	var w emulator.World
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	noErr(t, dec.Decode(&w), "decoding %s", path)
	return w
}

// inRegion moves a world's subnets to the same zones of region.
func inRegion(wd emulator.World, region string) emulator.World {
	wd.Subnets = slices.Clone(wd.Subnets)
	for i, s := range wd.Subnets {
		if z := s.AvailabilityZone; z != "" {
			wd.Subnets[i].AvailabilityZone = region + z[len(z)-1:]
		}
	}
	return wd
}

// census describes the resources of a World load or create as sorted
// lines that name resources by Name (or GroupName) instead of by ID, and
// that give a subnet's IPv6 block as its index in its VPC's.
func census(t *testing.T, c *ec2.Client, res emulator.LoadResult) []string {
	t.Helper()
	ctx := t.Context()
	names, blocks := map[string]string{}, map[string]netip.Prefix{}
	var lines []string
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: res.VPCs})
	noErr(t, err, "DescribeVpcs")
	for _, v := range vpcs.Vpcs {
		id := aws.ToString(v.VpcId)
		names[id] = tagMap(v.Tags)["Name"]
		for _, a := range v.Ipv6CidrBlockAssociationSet {
			blocks[id] = netip.MustParsePrefix(aws.ToString(a.Ipv6CidrBlock))
		}
		ipv6 := "-"
		if b, ok := blocks[id]; ok {
			ipv6 = fmt.Sprintf("/%d", b.Bits())
		}
		lines = append(lines, fmt.Sprintf("vpc %s %s ipv6=%s tags=%v", names[id], aws.ToString(v.CidrBlock), ipv6, tagMap(v.Tags)))
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: res.Subnets})
	noErr(t, err, "DescribeSubnets")
	for _, s := range subnets.Subnets {
		id, vpc := aws.ToString(s.SubnetId), aws.ToString(s.VpcId)
		names[id] = tagMap(s.Tags)["Name"]
		ipv6 := "-"
		for _, a := range s.Ipv6CidrBlockAssociationSet {
			ipv6 = ipv6Within(blocks[vpc], netip.MustParsePrefix(aws.ToString(a.Ipv6CidrBlock)))
		}
		lines = append(lines, fmt.Sprintf("subnet %s vpc=%s %s %s ipv6=%s tags=%v", names[id], names[vpc], aws.ToString(s.CidrBlock),
			aws.ToString(s.AvailabilityZone), ipv6, tagMap(s.Tags)))
	}
	if len(res.SecurityGroups) > 0 {
		groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: res.SecurityGroups})
		noErr(t, err, "DescribeSecurityGroups")
		for _, g := range groups.SecurityGroups {
			lines = append(lines, fmt.Sprintf("group %s vpc=%s tags=%v", aws.ToString(g.GroupName), names[aws.ToString(g.VpcId)], tagMap(g.Tags)))
		}
	}
	lines = append(lines, instanceCensus(t, c, res, names)...)
	lines = append(lines, eniCensus(t, c, res, names)...)
	slices.Sort(lines)
	return lines
}

// ipv6Within is a subnet's IPv6 block as "vpc+<index of its /64>" when it
// lies in its VPC's block, else as it is.
func ipv6Within(vpc, subnet netip.Prefix) string {
	if !vpc.IsValid() || !vpc.Contains(subnet.Addr()) {
		return subnet.String()
	}
	v, s := vpc.Addr().As16(), subnet.Addr().As16()
	return fmt.Sprintf("vpc+%d/%d", binary.BigEndian.Uint64(s[:8])-binary.BigEndian.Uint64(v[:8]), subnet.Bits())
}

// instanceCensus adds the instances to names (by their Name tag) and
// describes them.
func instanceCensus(t *testing.T, c *ec2.Client, res emulator.LoadResult, names map[string]string) []string {
	t.Helper()
	var ids, lines []string
	for _, i := range res.Instances {
		ids = append(ids, i.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	out, err := c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: ids})
	noErr(t, err, "DescribeInstances")
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			names[aws.ToString(i.InstanceId)] = tagMap(i.Tags)["Name"]
			lines = append(lines, fmt.Sprintf("instance %s %s subnet=%s zone=%s groups=%v ip=%s tags=%v", tagMap(i.Tags)["Name"], i.InstanceType,
				names[aws.ToString(i.SubnetId)], aws.ToString(i.Placement.AvailabilityZone), groupNames(i.SecurityGroups),
				aws.ToString(i.PrivateIpAddress), tagMap(i.Tags)))
		}
	}
	return lines
}

// eniCensus describes every ENI of the VPCs: the ones the world lists and
// its instances' primary ones.
func eniCensus(t *testing.T, c *ec2.Client, res emulator.LoadResult, names map[string]string) []string {
	t.Helper()
	var lines []string
	p := ec2.NewDescribeNetworkInterfacesPaginator(c, &ec2.DescribeNetworkInterfacesInput{Filters: []types.Filter{filter("vpc-id", res.VPCs...)}})
	for p.HasMorePages() {
		out, err := p.NextPage(t.Context())
		noErr(t, err, "DescribeNetworkInterfaces")
		for _, n := range out.NetworkInterfaces {
			attached := "-"
			if a := n.Attachment; a != nil {
				attached = fmt.Sprintf("%s@%d,deleteOnTermination=%t", names[aws.ToString(a.InstanceId)], aws.ToInt32(a.DeviceIndex), aws.ToBool(a.DeleteOnTermination))
			}
			primary, secondary := ipsOf(n)
			lines = append(lines, fmt.Sprintf("eni %s subnet=%s groups=%v description=%q attached=%s ips=%s+%v ipv6=%d prefixes=%d tags=%v",
				n.InterfaceType, names[aws.ToString(n.SubnetId)], groupNames(n.Groups), aws.ToString(n.Description), attached,
				primary, secondary, len(n.Ipv6Addresses), len(n.Ipv4Prefixes), tagMap(n.TagSet)))
		}
	}
	return lines
}

func groupNames(gs []types.GroupIdentifier) []string {
	var out []string
	for _, g := range gs {
		out = append(out, aws.ToString(g.GroupName))
	}
	slices.Sort(out)
	return out
}
