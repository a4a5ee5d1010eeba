package ec2conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
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

// newWorld creates the world of spec (conformanceWorld) through the EC2 API.
// Instances and ENIs created through the world are terminated and deleted
// when the test ends.
func newWorld(t *testing.T, tg *target, spec worldSpec) *world {
	t.Helper()
	w := &world{t: t, tg: tg, ec2: tg.client(), name: uniqueName(t), owned: &owned{}}
	t.Cleanup(w.cleanup)
	block, _ := tg.nets.block()
	wd := conformanceWorld(w.name, block, tg.region, spec)
	res := create(t, w.ec2, wd)
	w.vpc = res.VPCs[0]
	w.a = subnetInfo{id: res.Subnets[0], az: wd.Subnets[0].AvailabilityZone, cidr: netip.MustParsePrefix(wd.Subnets[0].CIDR)}
	w.b = subnetInfo{id: res.Subnets[1], az: wd.Subnets[1].AvailabilityZone, cidr: netip.MustParsePrefix(wd.Subnets[1].CIDR)}
	w.sg, w.sg2 = res.SecurityGroups[0], res.SecurityGroups[1]
	for _, i := range res.Instances {
		w.instances = append(w.instances, i.ID)
	}
	return w
}

// conformanceWorld is a test's world: VPC name on block (with an
// Amazon-provided IPv6 block when spec.ipv6), subnets name-a and name-b
// (its first two /24s) in the region's zones a and b, subnet a with the
// VPC's first IPv6 /64 when spec.ipv6; groups name-sg1 and name-sg2; and
// spec's instances in subnet a with group sg1, all tagged Name=name.
func conformanceWorld(name string, block netip.Prefix, region string, spec worldSpec) emulator.World {
	subnet := func(suffix string, idx int) emulator.SubnetSpec {
		b := block.Addr().As4()
		b[2] += byte(idx)
		return emulator.SubnetSpec{Name: name + "-" + suffix, VPC: name, CIDR: netip.PrefixFrom(netip.AddrFrom4(b), 24).String(),
			AvailabilityZone: region + suffix}
	}
	group := func(suffix string) emulator.SecurityGroupSpec {
		return emulator.SecurityGroupSpec{Name: name + "-" + suffix, VPC: name, Description: "ec2conformance " + suffix,
			Tags: map[string]string{"Name": name + "-" + suffix}}
	}
	wd := emulator.World{
		VPCs:           []emulator.VPCSpec{{Name: name, CIDR: block.String(), AmazonProvidedIPv6: spec.ipv6}},
		Subnets:        []emulator.SubnetSpec{subnet("a", 0), subnet("b", 1)},
		SecurityGroups: []emulator.SecurityGroupSpec{group("sg1"), group("sg2")},
	}
	if spec.ipv6 {
		first := 0
		wd.Subnets[0].IPv6CIDRIndex = &first
	}
	typ := firstNonEmpty(spec.instanceType, largeType)
	for range spec.instances {
		// Named by tag, not by Name: the instances share the VPC's name.
		wd.Instances = append(wd.Instances, emulator.InstanceSpec{Type: typ, Subnet: name + "-a",
			SecurityGroups: []string{name + "-sg1"}, Tags: map[string]string{"Name": name}})
	}
	return wd
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
