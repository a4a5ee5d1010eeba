package ec2conformance

import (
	"fmt"
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
	w := parallelWorld(t, worldSpec{})

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
	w := parallelWorld(t, worldSpec{})
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

// filterFixture is a world with five ENIs of known shapes:
//
//	a1  subnet a, sg,       "-alpha",  Role=web Env=prod, 2 secondary IPs, available
//	a2  subnet a, sg2,      "-beta",   Role=db,           attached at index 1
//	b1  subnet b, sg + sg2, "-gam*ma", Env=dev,           available
//	v6  subnet a, sg,       "-delta",  one IPv6 address,  available
//	p   the instance's primary ENI (index 0)
type filterFixture struct {
	w        *world
	id       map[string]string // label -> ENI ID
	eni      map[string]types.NetworkInterface
	instance string
}

func newFilterFixture(t *testing.T) *filterFixture {
	w := newWorld(t, suite, worldSpec{instances: 1, ipv6: true})
	f := &filterFixture{w: w, id: map[string]string{}, eni: map[string]types.NetworkInterface{}, instance: w.instances[0]}
	add := func(label string, n types.NetworkInterface) {
		f.id[label] = aws.ToString(n.NetworkInterfaceId)
		f.eni[label] = n
	}
	add("a1", w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String(w.name + "-alpha"),
		SecondaryPrivateIpAddressCount: aws.Int32(2), TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Role", "web", "Env", "prod")}))
	add("a2", w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String(w.name + "-beta"), Groups: []string{w.sg2},
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Role", "db")}))
	add("b1", w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.b.id), Description: aws.String(w.name + "-gam*ma"),
		Groups: []string{w.sg, w.sg2}, TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Env", "dev")}))
	add("v6", w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String(w.name + "-delta"), Ipv6AddressCount: aws.Int32(1)}))
	w.attach(f.id["a2"], f.instance, 1)
	p := w.primaryENI(f.instance)
	add("p", w.eni(p))
	if len(f.eni["v6"].Ipv6Addresses) != 1 {
		t.Fatalf("ENI created with Ipv6AddressCount 1 has %d IPv6 addresses", len(f.eni["v6"].Ipv6Addresses))
	}
	return f
}

func (f *filterFixture) ids(labels ...string) []string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		out = append(out, f.id[l])
	}
	slices.Sort(out)
	return out
}

func (f *filterFixture) labels(ids []string) []string {
	var out []string
	for _, id := range ids {
		l := id
		for label, x := range f.id {
			if x == id {
				l = label
			}
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// Every filter the operator and EC2's documentation rely on, alone and
// combined, with wildcards; every query is ANDed with vpc-id so other
// tests' ENIs never count.
func TestDescribeNetworkInterfacesFilters(t *testing.T) {
	t.Parallel()
	f := newFilterFixture(t)
	w := f.w
	a1Primary, a1Secondary := ipsOf(f.eni["a1"])
	if len(a1Secondary) != 2 {
		t.Fatalf("a1 has secondary IPs %v, want 2", a1Secondary)
	}
	b1Primary, _ := ipsOf(f.eni["b1"])
	v6Addr := aws.ToString(f.eni["v6"].Ipv6Addresses[0].Ipv6Address)
	n := w.name

	cases := []struct {
		name    string
		filters []types.Filter
		want    []string // labels
	}{
		{"vpc-id alone", nil, []string{"a1", "a2", "b1", "v6", "p"}},
		{"network-interface-id", []types.Filter{filter("network-interface-id", f.id["a1"], f.id["b1"])}, []string{"a1", "b1"}},
		{"addresses.private-ip-address primary", []types.Filter{filter("addresses.private-ip-address", a1Primary)}, []string{"a1"}},
		{"addresses.private-ip-address secondary", []types.Filter{filter("addresses.private-ip-address", a1Secondary[1])}, []string{"a1"}},
		{"addresses.private-ip-address several", []types.Filter{filter("addresses.private-ip-address", a1Secondary[0], b1Primary)}, []string{"a1", "b1"}},
		{"private-ip-address primary", []types.Filter{filter("private-ip-address", a1Primary)}, []string{"a1"}},
		{"private-ip-address ignores secondaries", []types.Filter{filter("private-ip-address", a1Secondary...)}, nil},
		{"ipv6-addresses.ipv6-address", []types.Filter{filter("ipv6-addresses.ipv6-address", v6Addr)}, []string{"v6"}},
		{"mac-address", []types.Filter{filter("mac-address", aws.ToString(f.eni["b1"].MacAddress))}, []string{"b1"}},
		{"subnet-id", []types.Filter{filter("subnet-id", w.b.id)}, []string{"b1"}},
		{"subnet-id both", []types.Filter{filter("subnet-id", w.a.id, w.b.id)}, []string{"a1", "a2", "b1", "v6", "p"}},
		{"availability-zone", []types.Filter{filter("availability-zone", w.b.az)}, []string{"b1"}},
		{"status available", []types.Filter{filter("status", "available")}, []string{"a1", "b1", "v6"}},
		{"status in-use", []types.Filter{filter("status", "in-use")}, []string{"a2", "p"}},
		{"interface-type interface", []types.Filter{filter("interface-type", "interface")}, []string{"a1", "a2", "b1", "v6", "p"}},
		{"interface-type branch", []types.Filter{filter("interface-type", "branch")}, nil},
		{"description exact", []types.Filter{filter("description", n+"-alpha")}, []string{"a1"}},
		{"description ORed", []types.Filter{filter("description", n+"-alpha", n+"-beta")}, []string{"a1", "a2"}},
		{"description is case-sensitive", []types.Filter{filter("description", n+"-ALPHA")}, nil},
		{"group-id", []types.Filter{filter("group-id", w.sg2)}, []string{"a2", "b1"}},
		{"group-name", []types.Filter{filter("group-name", w.name+"-sg2")}, []string{"a2", "b1"}},
		{"owner-id", []types.Filter{filter("owner-id", aws.ToString(f.eni["a1"].OwnerId))}, []string{"a1", "a2", "b1", "v6", "p"}},
		{"attachment.instance-id", []types.Filter{filter("attachment.instance-id", f.instance)}, []string{"a2", "p"}},
		{"attachment.device-index 1", []types.Filter{filter("attachment.device-index", "1")}, []string{"a2"}},
		{"attachment.device-index 0", []types.Filter{filter("attachment.device-index", "0")}, []string{"p"}},
		{"attachment.status", []types.Filter{filter("attachment.status", "attached")}, []string{"a2", "p"}},
		{"attachment.attachment-id", []types.Filter{filter("attachment.attachment-id", aws.ToString(f.eni["p"].Attachment.AttachmentId))}, []string{"p"}},
		{"attachment.delete-on-termination", []types.Filter{filter("attachment.delete-on-termination", "true")}, []string{"p"}},
		{"tag:KEY", []types.Filter{filter("tag:Role", "web")}, []string{"a1"}},
		{"tag:KEY values ORed", []types.Filter{filter("tag:Role", "web", "db")}, []string{"a1", "a2"}},
		{"tag:KEY is case-sensitive", []types.Filter{filter("tag:Role", "WEB")}, nil},
		{"tag-key", []types.Filter{filter("tag-key", "Env")}, []string{"a1", "b1"}},
		{"tag-value", []types.Filter{filter("tag-value", "prod", "db")}, []string{"a1", "a2"}},
		// Wildcards: * is any run of characters, ? exactly one, \ escapes.
		{"* suffix", []types.Filter{filter("description", n+"-*")}, []string{"a1", "a2", "b1", "v6"}},
		{"* prefix", []types.Filter{filter("description", "*-beta")}, []string{"a2"}},
		{"? one character", []types.Filter{filter("description", n+"-alph?")}, []string{"a1"}},
		{"? is not zero characters", []types.Filter{filter("description", n+"-alpha?")}, nil},
		{"escaped * is literal", []types.Filter{filter("description", n+`-gam\*ma`)}, []string{"b1"}},
		{"escaped * matches only *", []types.Filter{filter("description", n+`-alp\*`)}, nil},
		{"wildcard in tag value", []types.Filter{filter("tag:Role", "w*")}, []string{"a1"}},
		{"wildcard in tag-key", []types.Filter{filter("tag-key", "R?le")}, []string{"a1", "a2"}},
		// Filters are ANDed.
		{"AND tag and subnet", []types.Filter{filter("tag:Env", "prod", "dev"), filter("subnet-id", w.b.id)}, []string{"b1"}},
		{"AND disjoint", []types.Filter{filter("tag:Role", "web"), filter("status", "in-use")}, nil},
		{"AND three", []types.Filter{filter("group-id", w.sg), filter("status", "available"), filter("availability-zone", w.a.az)}, []string{"a1", "v6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := w.eniIDs(c.filters...)
			noErr(t, err, "DescribeNetworkInterfaces %v", describeFilters(c.filters))
			if want := f.ids(c.want...); !slices.Equal(got, want) {
				t.Errorf("filters %v matched %v, want %v", describeFilters(c.filters), f.labels(got), sorted(c.want...))
			}
		})
	}
}

func describeFilters(fs []types.Filter) string {
	s := ""
	for _, f := range fs {
		s += fmt.Sprintf("[%s=%v]", aws.ToString(f.Name), f.Values)
	}
	return s
}

// Filter names EC2 documents for DescribeNetworkInterfaces are accepted
// and match what the ENIs show.
func TestDescribeNetworkInterfacesDocumentedFilters(t *testing.T) {
	t.Parallel()
	f := newFilterFixture(t)
	a1 := f.eni["a1"]
	sn, err := f.w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{f.w.b.id}})
	noErr(t, err, "DescribeSubnets")
	zoneIDb := aws.ToString(sn.Subnets[0].AvailabilityZoneId)
	if got := aws.ToString(f.w.eni(f.id["b1"]).AvailabilityZoneId); got != zoneIDb {
		t.Errorf("ENI b1 has AvailabilityZoneId %q, want its subnet's %q", got, zoneIDb)
	}
	cases := []struct {
		name, value string
		want        []string
	}{
		{"availability-zone-id", zoneIDb, []string{"b1"}},
		{"private-dns-name", aws.ToString(a1.PrivateDnsName), []string{"a1"}},
		{"addresses.primary", "false", []string{"a1"}}, // only a1 has secondary (non-primary) addresses
		{"source-dest-check", "true", []string{"a1", "a2", "b1", "v6", "p"}},
		{"attachment.instance-owner-id", aws.ToString(a1.OwnerId), []string{"a2", "p"}},
		{"requester-managed", "false", []string{"a1", "a2", "b1", "v6", "p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := f.w.eniIDs(filter(c.name, c.value))
			noErr(t, err, "filter %s=%s", c.name, c.value)
			if want := f.ids(c.want...); !slices.Equal(got, want) {
				t.Errorf("%s=%s matched %v, want %v", c.name, c.value, f.labels(got), sorted(c.want...))
			}
		})
	}
}

// An unknown filter name is the client's mistake: 400 InvalidParameterValue,
// never a 500, on every Describe action.
func TestDescribeUnknownFilter(t *testing.T) {
	t.Parallel()
	c := suite.client()
	bad := []types.Filter{filter("no-such-filter", "x")}
	calls := map[string]func() error{
		"DescribeNetworkInterfaces": func() error {
			return errOf(c.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{Filters: bad}))
		},
		"DescribeInstances": func() error {
			return errOf(c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: bad}))
		},
		"DescribeSubnets": func() error { return errOf(c.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{Filters: bad})) },
		"DescribeSecurityGroups": func() error {
			return errOf(c.DescribeSecurityGroups(t.Context(), &ec2.DescribeSecurityGroupsInput{Filters: bad}))
		},
		"DescribeVpcs": func() error { return errOf(c.DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{Filters: bad})) },
		"DescribeTags": func() error { return errOf(c.DescribeTags(t.Context(), &ec2.DescribeTagsInput{Filters: bad})) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			requireAPIError(t, call(), "InvalidParameterValue", http.StatusBadRequest)
		})
	}
}

// EC2 takes at most 200 filter values in one call, counted over all filters.
func TestDescribeNetworkInterfacesFilterLimit(t *testing.T) {
	t.Parallel()
	c := suite.client()
	values := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.255.%d.%d", i/250, i%250+1)
		}
		return out
	}
	describe := func(fs ...types.Filter) error {
		_, err := c.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{Filters: fs})
		return err
	}
	noErr(t, describe(filter("addresses.private-ip-address", values(200)...)), "200 filter values")
	requireAPIError(t, describe(filter("addresses.private-ip-address", values(201)...)), "FilterLimitExceeded", http.StatusBadRequest)
	requireAPIError(t, describe(filter("addresses.private-ip-address", values(150)...), filter("private-ip-address", values(51)...)),
		"FilterLimitExceeded", http.StatusBadRequest)
}

// MaxResults must be within 5..1000 and cannot be combined with
// NetworkInterfaceIds ("You cannot specify this parameter and the network
// interface IDs parameter in the same request").
func TestDescribeNetworkInterfacesMaxResults(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	describe := func(max int32, ids ...string) error {
		_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{
			MaxResults: aws.Int32(max), NetworkInterfaceIds: ids, Filters: []types.Filter{filter("vpc-id", w.vpc)}})
		return err
	}
	for _, max := range []int32{5, 1000} {
		noErr(t, describe(max), "MaxResults %d", max)
	}
	for _, max := range []int32{4, 1001} {
		requireAPIError(t, describe(max), "InvalidParameterValue", http.StatusBadRequest)
	}
	requireAPIError(t, describe(5, aws.ToString(n.NetworkInterfaceId)), "InvalidParameterCombination", http.StatusBadRequest)
}

// NextToken walks every item exactly once, filtered or not.
func TestDescribeNetworkInterfacesPagination(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	want := map[string]bool{}
	for i := range 12 {
		subnet := w.a.id
		if i%3 == 0 {
			subnet = w.b.id
		}
		n := w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(subnet)})
		want[aws.ToString(n.NetworkInterfaceId)] = true
	}

	walk := func(t *testing.T, max int32, filters []types.Filter) (seen map[string]int, pages int) {
		seen = map[string]int{}
		in := &ec2.DescribeNetworkInterfacesInput{MaxResults: aws.Int32(max), Filters: filters}
		for {
			out, err := w.ec2.DescribeNetworkInterfaces(t.Context(), in)
			noErr(t, err, "DescribeNetworkInterfaces page %d", pages+1)
			pages++
			if len(out.NetworkInterfaces) > int(max) {
				t.Fatalf("page %d has %d items, MaxResults is %d", pages, len(out.NetworkInterfaces), max)
			}
			for _, n := range out.NetworkInterfaces {
				seen[aws.ToString(n.NetworkInterfaceId)]++
			}
			if aws.ToString(out.NextToken) == "" {
				return seen, pages
			}
			in.NextToken = out.NextToken
			if pages > 10000 {
				t.Fatal("pagination does not end")
			}
		}
	}
	check := func(t *testing.T, seen map[string]int, exact bool) {
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s was returned %d times", id, n)
			}
			if exact && !want[id] {
				t.Errorf("%s is not one of the world's ENIs", id)
			}
		}
		for id := range want {
			if seen[id] != 1 {
				t.Errorf("%s was returned %d times, want once", id, seen[id])
			}
		}
	}

	t.Run("filtered by vpc-id", func(t *testing.T) {
		seen, pages := walk(t, 5, []types.Filter{filter("vpc-id", w.vpc)})
		check(t, seen, true)
		if pages < 3 {
			t.Errorf("12 ENIs came in %d pages of at most 5", pages)
		}
	})
	t.Run("filtered by subnet-id", func(t *testing.T) {
		seen, _ := walk(t, 5, []types.Filter{filter("subnet-id", w.a.id, w.b.id)})
		check(t, seen, true)
	})
	t.Run("unfiltered", func(t *testing.T) {
		// Other tests' ENIs come and go meanwhile; ours must each appear
		// exactly once and nothing may repeat.
		seen, _ := walk(t, 1000, nil)
		check(t, seen, false)
	})
	t.Run("SDK paginator", func(t *testing.T) {
		p := ec2.NewDescribeNetworkInterfacesPaginator(w.ec2, &ec2.DescribeNetworkInterfacesInput{
			MaxResults: aws.Int32(5), Filters: []types.Filter{filter("vpc-id", w.vpc)}})
		seen := map[string]int{}
		for p.HasMorePages() {
			out, err := p.NextPage(t.Context())
			noErr(t, err, "paginator")
			for _, n := range out.NetworkInterfaces {
				seen[aws.ToString(n.NetworkInterfaceId)]++
			}
		}
		check(t, seen, true)
	})
}

// Describing an ENI by an ID that does not exist is an error, not an
// empty answer.
func TestDescribeNetworkInterfacesUnknownID(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{
		NetworkInterfaceIds: []string{aws.ToString(n.NetworkInterfaceId), "eni-0123456789abcdef0"}})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", http.StatusBadRequest)
}
