package ec2conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Instance types with known interface limits (MaximumNetworkInterfaces).
const (
	smallType = "t3.micro" // 2 interfaces, 2 IPv4 addresses per interface
	largeType = "m5.large" // 3 interfaces, 10 IPv4 addresses per interface
)

func imageID() string { return firstNonEmpty(os.Getenv("EC2_IMAGE_ID"), "ami-0123456789abcdef0") }

// worldSpec says what a test's world holds besides a VPC, two subnets in
// zones "a" and "b" and two security groups.
type worldSpec struct {
	// instances are launched in subnet a.
	instances    int
	instanceType string // default largeType
	// ipv6 gives subnet a an IPv6 CIDR.
	ipv6 bool
}

type subnetInfo struct {
	id   string
	az   string
	cidr netip.Prefix
}

// world is one test's own corner of EC2, built through the EC2 API only.
// Its helpers fail the test they are bound to: a subtest takes its own
// view with w.in(t).
type world struct {
	t    *testing.T
	tg   *target
	ec2  *ec2.Client
	name string // unique prefix for names, tags and descriptions
	vpc  string
	a, b subnetInfo
	// sg and sg2 are the world's own security groups (besides the VPC's
	// default group).
	sg, sg2   string
	instances []string

	owned *owned
}

// owned lists what a world created, for cleanup; shared by its views.
type owned struct {
	mu        sync.Mutex
	enis      []string
	instances []string
}

// in returns a view of the world whose helpers fail t (a subtest)
// instead of the test that built the world.
func (w *world) in(t *testing.T) *world {
	v := *w
	v.t = t
	return &v
}

// uniqueName returns a name unique to the test and this run.
func uniqueName(t *testing.T) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	n := strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(strings.ToLower(t.Name()))
	if len(n) > 40 {
		n = n[:40]
	}
	return "ec2conf-" + n + "-" + hex.EncodeToString(b)
}

func tagSpec(rt types.ResourceType, kv ...string) []types.TagSpecification {
	return []types.TagSpecification{{ResourceType: rt, Tags: tags(kv...)}}
}

func tags(kv ...string) []types.Tag {
	var out []types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

func filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

// parallelWorld is a world on the suite's target for a test that runs
// in parallel with the others, as a test with a world of its own can:
// every world has its own VPC and names.
func parallelWorld(t *testing.T, spec worldSpec) *world {
	t.Helper()
	t.Parallel()
	return newWorld(t, suite, spec)
}

// newWorld builds a VPC, subnets a and b, two security groups and the
// instances of spec through the EC2 API. Instances and ENIs created
// through the world are terminated and deleted when the test ends.
func newWorld(t *testing.T, tg *target, spec worldSpec) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{t: t, tg: tg, ec2: tg.client(), name: uniqueName(t), owned: &owned{}}
	t.Cleanup(w.cleanup)
	block, k := tg.nets.block()

	vpcIn := &ec2.CreateVpcInput{CidrBlock: aws.String(block.String()), TagSpecifications: tagSpec(types.ResourceTypeVpc, "Name", w.name)}
	if spec.ipv6 {
		vpcIn.AmazonProvidedIpv6CidrBlock = aws.Bool(true)
	}
	vpc, err := w.ec2.CreateVpc(ctx, vpcIn)
	noErr(t, err, "CreateVpc %s", block)
	w.vpc = aws.ToString(vpc.Vpc.VpcId)

	subnet := func(suffix string, idx int, ipv6 string) subnetInfo {
		b := block.Addr().As4()
		b[2] += byte(idx)
		cidr := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		in := &ec2.CreateSubnetInput{VpcId: aws.String(w.vpc), CidrBlock: aws.String(cidr.String()),
			AvailabilityZone: aws.String(tg.region + suffix), TagSpecifications: tagSpec(types.ResourceTypeSubnet, "Name", w.name+"-"+suffix)}
		if ipv6 != "" {
			in.Ipv6CidrBlock = aws.String(ipv6)
		}
		out, err := w.ec2.CreateSubnet(ctx, in)
		noErr(t, err, "CreateSubnet %s", cidr)
		return subnetInfo{id: aws.ToString(out.Subnet.SubnetId), az: aws.ToString(out.Subnet.AvailabilityZone), cidr: cidr}
	}
	v6 := ""
	if spec.ipv6 {
		v6 = fmt.Sprintf("2600:1f18:0:%x::/64", k)
		for _, as := range vpc.Vpc.Ipv6CidrBlockAssociationSet {
			// A real VPC gets a /56 from Amazon: use its first /64.
			if p, err := netip.ParsePrefix(aws.ToString(as.Ipv6CidrBlock)); err == nil {
				v6 = netip.PrefixFrom(p.Addr(), 64).String()
			}
		}
	}
	w.a = subnet("a", 0, v6)
	w.b = subnet("b", 1, "")

	group := func(suffix string) string {
		out, err := w.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(w.name + "-" + suffix),
			Description: aws.String("ec2conformance " + suffix), VpcId: aws.String(w.vpc),
			TagSpecifications: tagSpec(types.ResourceTypeSecurityGroup, "Name", w.name+"-"+suffix)})
		noErr(t, err, "CreateSecurityGroup %s", suffix)
		return aws.ToString(out.GroupId)
	}
	w.sg, w.sg2 = group("sg1"), group("sg2")

	typ := spec.instanceType
	if typ == "" {
		typ = largeType
	}
	for range spec.instances {
		w.instances = append(w.instances, aws.ToString(w.runInstance(typ, w.a.id).InstanceId))
	}
	return w
}

// cleanup terminates the world's instances, then deletes its ENIs. Errors
// are ignored: this is hygiene, not part of any check.
func (w *world) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.owned.mu.Lock()
	instances, enis := w.owned.instances, w.owned.enis
	w.owned.mu.Unlock()
	release(ctx, w.ec2, instances, enis)
}

// release terminates instances, then deletes ENIs, ignoring errors.
func release(ctx context.Context, c *ec2.Client, instances, enis []string) {
	if len(instances) > 0 {
		_, _ = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: instances})
	}
	for _, id := range enis {
		_, _ = c.DeleteNetworkInterface(ctx, &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	}
}

// runInstance launches one instance and returns it as RunInstances did.
func (w *world) runInstance(typ, subnet string) types.Instance {
	w.t.Helper()
	out, err := w.ec2.RunInstances(w.t.Context(), &ec2.RunInstancesInput{
		ImageId: aws.String(imageID()), InstanceType: types.InstanceType(typ), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId: aws.String(subnet), SecurityGroupIds: []string{w.sg},
		TagSpecifications: tagSpec(types.ResourceTypeInstance, "Name", w.name),
	})
	noErr(w.t, err, "RunInstances %s in %s", typ, subnet)
	if len(out.Instances) != 1 {
		w.t.Fatalf("RunInstances returned %d instances, want 1", len(out.Instances))
	}
	w.ownInstances(aws.ToString(out.Instances[0].InstanceId))
	return out.Instances[0]
}

// createENI creates an ENI; SubnetId defaults to subnet a and Groups to sg.
func (w *world) createENI(in *ec2.CreateNetworkInterfaceInput) types.NetworkInterface {
	w.t.Helper()
	if in.SubnetId == nil {
		in.SubnetId = aws.String(w.a.id)
	}
	if in.Groups == nil {
		in.Groups = []string{w.sg}
	}
	out, err := w.ec2.CreateNetworkInterface(w.t.Context(), in)
	noErr(w.t, err, "CreateNetworkInterface in %s", aws.ToString(in.SubnetId))
	w.own(aws.ToString(out.NetworkInterface.NetworkInterfaceId))
	return *out.NetworkInterface
}

// own registers an ENI created some other way for cleanup.
func (w *world) own(eniID string) {
	w.owned.mu.Lock()
	defer w.owned.mu.Unlock()
	w.owned.enis = append(w.owned.enis, eniID)
}

// ownInstances registers instances launched some other way for cleanup.
func (w *world) ownInstances(ids ...string) {
	w.owned.mu.Lock()
	defer w.owned.mu.Unlock()
	w.owned.instances = append(w.owned.instances, ids...)
}

// attach attaches an ENI and returns the attachment ID.
func (w *world) attach(eniID, instanceID string, index int32) string {
	w.t.Helper()
	out, err := w.ec2.AttachNetworkInterface(w.t.Context(), &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(eniID), InstanceId: aws.String(instanceID), DeviceIndex: aws.Int32(index)})
	noErr(w.t, err, "AttachNetworkInterface %s to %s at %d", eniID, instanceID, index)
	return aws.ToString(out.AttachmentId)
}

// eni describes one ENI by ID.
func (w *world) eni(id string) types.NetworkInterface {
	w.t.Helper()
	out, err := w.ec2.DescribeNetworkInterfaces(w.t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
	noErr(w.t, err, "DescribeNetworkInterfaces %s", id)
	if len(out.NetworkInterfaces) != 1 {
		w.t.Fatalf("DescribeNetworkInterfaces %s returned %d interfaces", id, len(out.NetworkInterfaces))
	}
	return out.NetworkInterfaces[0]
}

// instance describes one instance by ID.
func (w *world) instance(id string) types.Instance {
	w.t.Helper()
	out, err := w.ec2.DescribeInstances(w.t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	noErr(w.t, err, "DescribeInstances %s", id)
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		w.t.Fatalf("DescribeInstances %s returned %d reservations", id, len(out.Reservations))
	}
	return out.Reservations[0].Instances[0]
}

// primaryENI returns the ID of the instance's interface at device index 0.
func (w *world) primaryENI(instanceID string) string {
	w.t.Helper()
	for _, n := range w.instance(instanceID).NetworkInterfaces {
		if n.Attachment != nil && aws.ToInt32(n.Attachment.DeviceIndex) == 0 {
			return aws.ToString(n.NetworkInterfaceId)
		}
	}
	w.t.Fatalf("instance %s has no interface at device index 0", instanceID)
	return ""
}

// eniIDs returns the sorted IDs of the world's ENIs matching the filters
// (ANDed with vpc-id), following NextToken.
func (w *world) eniIDs(filters ...types.Filter) ([]string, error) {
	in := &ec2.DescribeNetworkInterfacesInput{Filters: append([]types.Filter{filter("vpc-id", w.vpc)}, filters...)}
	var ids []string
	p := ec2.NewDescribeNetworkInterfacesPaginator(w.ec2, in)
	for p.HasMorePages() {
		out, err := p.NextPage(w.t.Context())
		if err != nil {
			return nil, err
		}
		for _, n := range out.NetworkInterfaces {
			ids = append(ids, aws.ToString(n.NetworkInterfaceId))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// tagsOf returns the tags of a resource as DescribeTags reports them.
func (w *world) tagsOf(id string) map[string]string {
	w.t.Helper()
	out, err := w.ec2.DescribeTags(w.t.Context(), &ec2.DescribeTagsInput{Filters: []types.Filter{filter("resource-id", id)}})
	noErr(w.t, err, "DescribeTags of %s", id)
	m := map[string]string{}
	for _, d := range out.Tags {
		m[aws.ToString(d.Key)] = aws.ToString(d.Value)
	}
	return m
}

// isNotFound tells whether err says the ENI does not exist.
func isENINotFound(err error) bool { return errorCode(err) == "InvalidNetworkInterfaceID.NotFound" }

// ipsOf returns an ENI's private IPv4 addresses: the primary first.
func ipsOf(n types.NetworkInterface) (primary string, secondary []string) {
	for _, a := range n.PrivateIpAddresses {
		if aws.ToBool(a.Primary) {
			primary = aws.ToString(a.PrivateIpAddress)
		} else {
			secondary = append(secondary, aws.ToString(a.PrivateIpAddress))
		}
	}
	return primary, secondary
}

func tagMap(ts []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range ts {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func groupIDs(gs []types.GroupIdentifier) []string {
	var out []string
	for _, g := range gs {
		out = append(out, aws.ToString(g.GroupId))
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func netipString(b [4]byte) string { return netip.AddrFrom4(b).String() }
