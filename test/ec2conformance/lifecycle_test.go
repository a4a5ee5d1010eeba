package ec2conformance

import (
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A retried CreateNetworkInterface with the same ClientToken and the same
// parameters returns the first ENI instead of making a second one; the
// same token with other parameters is refused.
func TestCreateNetworkInterfaceClientToken(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	token := w.name
	in := func(desc string) *ec2.CreateNetworkInterfaceInput {
		return &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), Groups: []string{w.sg}, Description: aws.String(desc),
			ClientToken: aws.String(token), TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Purpose", "idempotency")}
	}
	first := w.createENI(in("first"))
	again := w.createENI(in("first"))
	if a, b := aws.ToString(first.NetworkInterfaceId), aws.ToString(again.NetworkInterfaceId); a != b {
		t.Fatalf("same ClientToken, same parameters: got %s then %s, want the same ENI", a, b)
	}
	ids, err := w.eniIDs()
	noErr(t, err, "listing the world's ENIs")
	if len(ids) != 1 {
		t.Fatalf("the VPC has %d ENIs after a retried create, want 1: %v", len(ids), ids)
	}

	_, err = w.ec2.CreateNetworkInterface(t.Context(), in("second"))
	requireAPIError(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	other := in("first")
	other.SubnetId = aws.String(w.b.id)
	_, err = w.ec2.CreateNetworkInterface(t.Context(), other)
	requireAPIError(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	if ids, _ := w.eniIDs(); len(ids) != 1 {
		t.Fatalf("the VPC has %d ENIs after mismatched retries, want 1: %v", len(ids), ids)
	}
}

// The fields of a new ENI: tags from TagSpecifications, groups, subnet,
// zone, description, status, a MAC, a primary IP inside the subnet.
func TestCreateNetworkInterfaceFields(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.b.id), Groups: []string{w.sg, w.sg2},
		Description: aws.String("made by " + w.name), TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Name", w.name, "Owner", "conformance")})
	got := w.eni(aws.ToString(n.NetworkInterfaceId))
	for _, x := range []types.NetworkInterface{n, got} {
		if m := tagMap(x.TagSet); !maps.Equal(m, map[string]string{"Name": w.name, "Owner": "conformance"}) {
			t.Errorf("tags %v, want Name and Owner from TagSpecifications", m)
		}
		if g := groupIDs(x.Groups); !slices.Equal(g, sorted(w.sg, w.sg2)) {
			t.Errorf("groups %v, want %v", g, sorted(w.sg, w.sg2))
		}
		if aws.ToString(x.SubnetId) != w.b.id || aws.ToString(x.VpcId) != w.vpc || aws.ToString(x.AvailabilityZone) != w.b.az {
			t.Errorf("subnet/vpc/zone %s/%s/%s, want %s/%s/%s", aws.ToString(x.SubnetId), aws.ToString(x.VpcId),
				aws.ToString(x.AvailabilityZone), w.b.id, w.vpc, w.b.az)
		}
		if aws.ToString(x.Description) != "made by "+w.name {
			t.Errorf("description %q", aws.ToString(x.Description))
		}
		if x.InterfaceType != types.NetworkInterfaceTypeInterface {
			t.Errorf("interface type %q, want interface", x.InterfaceType)
		}
		if aws.ToString(x.MacAddress) == "" {
			t.Error("no MAC address")
		}
		ip, err := netip.ParseAddr(aws.ToString(x.PrivateIpAddress))
		if err != nil || !w.b.cidr.Contains(ip) {
			t.Errorf("primary IP %q is not inside subnet %s", aws.ToString(x.PrivateIpAddress), w.b.cidr)
		}
		if x.Attachment != nil {
			t.Errorf("a new ENI is attached: %+v", x.Attachment)
		}
	}
	if got.Status != types.NetworkInterfaceStatusAvailable {
		t.Errorf("status %q, want available", got.Status)
	}
}

// An address held by another ENI cannot be requested again, as primary
// or as secondary; a free one can.
func TestCreateNetworkInterfaceExplicitAddresses(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	first := w.createENI(&ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(1)})
	primary, secondary := ipsOf(first)

	for _, ip := range []string{primary, secondary[0]} {
		_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), PrivateIpAddress: aws.String(ip)})
		requireAPIError(t, err, "InvalidIPAddress.InUse", http.StatusBadRequest)
		_, err = w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
			PrivateIpAddresses: []types.PrivateIpAddressSpecification{{PrivateIpAddress: aws.String(ip), Primary: aws.Bool(false)}}})
		requireAPIError(t, err, "InvalidIPAddress.InUse", http.StatusBadRequest)
	}

	free := w.a.cidr.Addr().As4()
	free[3] = 200
	freeIP := netipString(free)
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{PrivateIpAddress: aws.String(freeIP)})
	if got := aws.ToString(n.PrivateIpAddress); got != freeIP {
		t.Errorf("asked for primary %s, got %s", freeIP, got)
	}
	outside := w.b.cidr.Addr().Next().Next().Next().Next().Next().String()
	_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), PrivateIpAddress: aws.String(outside)})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

// SecondaryPrivateIpAddressCount adds secondary IPs, Ipv4PrefixCount
// delegated /28 prefixes; prefix addresses are not private IP addresses of
// the ENI for the addresses.private-ip-address filter.
func TestCreateNetworkInterfaceSecondaryIPsAndPrefixes(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(3)})
	primary, secondary := ipsOf(n)
	if primary != aws.ToString(n.PrivateIpAddress) {
		t.Errorf("the primary entry of PrivateIpAddresses is %s, PrivateIpAddress is %s", primary, aws.ToString(n.PrivateIpAddress))
	}
	if len(secondary) != 3 {
		t.Fatalf("SecondaryPrivateIpAddressCount 3 gave secondary IPs %v", secondary)
	}
	seen := map[string]bool{primary: true}
	for _, ip := range secondary {
		a, err := netip.ParseAddr(ip)
		if err != nil || !w.a.cidr.Contains(a) || seen[ip] {
			t.Errorf("secondary IP %s is outside %s or repeated", ip, w.a.cidr)
		}
		seen[ip] = true
	}

	p := w.createENI(&ec2.CreateNetworkInterfaceInput{Ipv4PrefixCount: aws.Int32(2)})
	got := w.eni(aws.ToString(p.NetworkInterfaceId))
	if len(got.Ipv4Prefixes) != 2 {
		t.Fatalf("Ipv4PrefixCount 2 gave prefixes %v", got.Ipv4Prefixes)
	}
	var prefixes []netip.Prefix
	for _, x := range got.Ipv4Prefixes {
		pf, err := netip.ParsePrefix(aws.ToString(x.Ipv4Prefix))
		if err != nil || pf.Bits() != 28 || pf.Masked() != pf || !w.a.cidr.Contains(pf.Addr()) {
			t.Errorf("prefix %q is not an aligned /28 inside %s", aws.ToString(x.Ipv4Prefix), w.a.cidr)
			continue
		}
		for ip := range seen {
			if pf.Contains(netip.MustParseAddr(ip)) {
				t.Errorf("prefix %s overlaps address %s of another ENI", pf, ip)
			}
		}
		prefixes = append(prefixes, pf)
	}
	if len(prefixes) > 0 {
		inside := prefixes[0].Addr().Next().String()
		ids, err := w.eniIDs(filter("addresses.private-ip-address", inside))
		noErr(t, err, "filter by an address inside a prefix")
		if len(ids) != 0 {
			t.Errorf("addresses.private-ip-address %s (inside a delegated prefix) matched %v, want nothing", inside, ids)
		}
	}

	// Prefixes are assigned and unassigned like addresses.
	pid := aws.ToString(p.NetworkInterfaceId)
	out, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(pid), Ipv4PrefixCount: aws.Int32(1)})
	noErr(t, err, "AssignPrivateIpAddresses Ipv4PrefixCount 1")
	if len(out.AssignedIpv4Prefixes) != 1 {
		t.Fatalf("assigned prefixes %v, want 1", out.AssignedIpv4Prefixes)
	}
	added := aws.ToString(out.AssignedIpv4Prefixes[0].Ipv4Prefix)
	if slices.ContainsFunc(prefixes, func(pf netip.Prefix) bool { return pf.String() == added }) {
		t.Errorf("the assigned prefix %s is already on the ENI: %v", added, prefixes)
	}
	_, err = w.ec2.UnassignPrivateIpAddresses(t.Context(), &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(pid), Ipv4Prefixes: []string{added}})
	noErr(t, err, "UnassignPrivateIpAddresses %s", added)
	if n := len(w.eni(pid).Ipv4Prefixes); n != len(prefixes) {
		t.Errorf("after unassigning %s the ENI has %d prefixes, want %d", added, n, len(prefixes))
	}

	t.Run("prefixes of one request are distinct", func(t *testing.T) {
		if len(prefixes) == 2 && prefixes[0].Overlaps(prefixes[1]) {
			t.Errorf("prefixes %v overlap", prefixes)
		}
	})
}

// CreateNetworkInterface refuses subnets and groups that do not exist,
// groups of another VPC, tags for another resource type, and requests a
// subnet has no room for; a refused create leaves nothing behind.
func TestCreateNetworkInterfaceInvalidParameters(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	otherVPC := newWorld(t, suite, worldSpec{})
	tiny := w.a.cidr.Addr().As4()
	tiny[2] += 2
	tinyCIDR := netipString(tiny) + "/28" // 16 addresses, 11 usable
	sn, err := w.ec2.CreateSubnet(t.Context(), &ec2.CreateSubnetInput{VpcId: aws.String(w.vpc), CidrBlock: aws.String(tinyCIDR),
		AvailabilityZone: aws.String(w.a.az)})
	noErr(t, err, "CreateSubnet %s", tinyCIDR)
	if got := aws.ToInt32(sn.Subnet.AvailableIpAddressCount); got != 11 {
		t.Errorf("a new /28 has %d available addresses, want 11", got)
	}

	cases := []struct {
		name string
		in   *ec2.CreateNetworkInterfaceInput
		code string
	}{
		{"unknown subnet", &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String("subnet-0123456789abcdef0")}, "InvalidSubnetID.NotFound"},
		{"unknown group", &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), Groups: []string{"sg-0123456789abcdef0"}}, "InvalidGroup.NotFound"},
		{"group of another VPC", &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), Groups: []string{otherVPC.sg}}, "InvalidParameterValue"},
		{"tags for an instance", &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
			TagSpecifications: tagSpec(types.ResourceTypeInstance, "k", "v")}, "InvalidParameterValue"},
		{"more addresses than the subnet has", &ec2.CreateNetworkInterfaceInput{SubnetId: sn.Subnet.SubnetId,
			SecondaryPrivateIpAddressCount: aws.Int32(11)}, "InsufficientFreeAddressesInSubnet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.ec2.CreateNetworkInterface(t.Context(), c.in)
			requireAPIError(t, err, c.code, http.StatusBadRequest)
		})
	}
	if ids, _ := w.eniIDs(); len(ids) != 0 {
		t.Errorf("refused creates left ENIs behind: %v", ids)
	}
	out, err := w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{aws.ToString(sn.Subnet.SubnetId)}})
	noErr(t, err, "DescribeSubnets")
	if got := aws.ToInt32(out.Subnets[0].AvailableIpAddressCount); got != 11 {
		t.Errorf("after a refused create the /28 has %d available addresses, want 11", got)
	}
	// The whole subnet can be taken: 1 primary + 10 secondary.
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: sn.Subnet.SubnetId, SecondaryPrivateIpAddressCount: aws.Int32(10)})
	if _, sec := ipsOf(n); len(sec) != 10 {
		t.Errorf("got %d secondary IPs, want 10", len(sec))
	}
	_, err = w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: sn.Subnet.SubnetId})
	requireAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)
}

// Secondary IPs come and go with Assign/UnassignPrivateIpAddresses and are
// found through addresses.private-ip-address meanwhile.
func TestAssignUnassignPrivateIPAddresses(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	id := aws.ToString(n.NetworkInterfaceId)
	other := w.createENI(&ec2.CreateNetworkInterfaceInput{})

	out, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
		SecondaryPrivateIpAddressCount: aws.Int32(2)})
	noErr(t, err, "AssignPrivateIpAddresses count 2")
	if len(out.AssignedPrivateIpAddresses) != 2 {
		t.Fatalf("assigned %v, want 2 addresses", out.AssignedPrivateIpAddresses)
	}
	assigned := []string{aws.ToString(out.AssignedPrivateIpAddresses[0].PrivateIpAddress), aws.ToString(out.AssignedPrivateIpAddresses[1].PrivateIpAddress)}

	free := w.a.cidr.Addr().As4()
	free[3] = 201
	explicit := netipString(free)
	out, err = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
		PrivateIpAddresses: []string{explicit}})
	noErr(t, err, "AssignPrivateIpAddresses %s", explicit)
	if len(out.AssignedPrivateIpAddresses) != 1 || aws.ToString(out.AssignedPrivateIpAddresses[0].PrivateIpAddress) != explicit {
		t.Errorf("assigned %v, want [%s]", out.AssignedPrivateIpAddresses, explicit)
	}
	_, secondary := ipsOf(w.eni(id))
	if want := sorted(append(assigned, explicit)...); !slices.Equal(sorted(secondary...), want) {
		t.Fatalf("secondary IPs %v, want %v", secondary, want)
	}
	ids, err := w.eniIDs(filter("addresses.private-ip-address", assigned[1]))
	noErr(t, err, "filter by an assigned IP")
	if !slices.Equal(ids, []string{id}) {
		t.Errorf("addresses.private-ip-address %s matched %v, want [%s]", assigned[1], ids, id)
	}

	otherIP := aws.ToString(other.PrivateIpAddress)
	_, err = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
		PrivateIpAddresses: []string{otherIP}})
	requireAPIError(t, err, "InvalidIPAddress.InUse", http.StatusBadRequest)

	_, err = w.ec2.UnassignPrivateIpAddresses(t.Context(), &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
		PrivateIpAddresses: []string{assigned[0], explicit}})
	noErr(t, err, "UnassignPrivateIpAddresses")
	if _, secondary := ipsOf(w.eni(id)); !slices.Equal(secondary, []string{assigned[1]}) {
		t.Errorf("secondary IPs after unassign %v, want [%s]", secondary, assigned[1])
	}
	if ids, _ := w.eniIDs(filter("addresses.private-ip-address", assigned[0])); len(ids) != 0 {
		t.Errorf("an unassigned IP still matches %v", ids)
	}

	for name, ip := range map[string]string{"primary": aws.ToString(n.PrivateIpAddress), "another ENI's": otherIP, "already unassigned": explicit} {
		_, err = w.ec2.UnassignPrivateIpAddresses(t.Context(), &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
			PrivateIpAddresses: []string{ip}})
		if err == nil {
			t.Errorf("unassigning the %s address %s succeeded", name, ip)
			continue
		}
		requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	}

	// The freed address can be handed out again.
	_, err = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: other.NetworkInterfaceId,
		PrivateIpAddresses: []string{explicit}})
	noErr(t, err, "assigning a freed address to another ENI")
}

// AllowReassignment moves an address held by another ENI; without it the
// address is refused as in use.
func TestAssignPrivateIPAddressesAllowReassignment(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	from := w.createENI(&ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(1)})
	to := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	_, moving := ipsOf(from)
	assign := func(allow bool) error {
		_, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: to.NetworkInterfaceId,
			PrivateIpAddresses: moving, AllowReassignment: aws.Bool(allow)})
		return err
	}
	requireAPIError(t, assign(false), "InvalidIPAddress.InUse", http.StatusBadRequest)
	noErr(t, assign(true), "AssignPrivateIpAddresses %v with AllowReassignment", moving)
	if _, sec := ipsOf(w.eni(aws.ToString(to.NetworkInterfaceId))); !slices.Equal(sec, moving) {
		t.Errorf("the target ENI holds secondary IPs %v, want %v", sec, moving)
	}
	if _, sec := ipsOf(w.eni(aws.ToString(from.NetworkInterfaceId))); len(sec) != 0 {
		t.Errorf("the source ENI still holds %v", sec)
	}

	// Assigning what the ENI holds already, its primary address included,
	// may succeed or fail, but never lists an address twice.
	toPrimary := aws.ToString(to.PrivateIpAddress)
	for _, allow := range []bool{false, true} {
		_, _ = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: to.NetworkInterfaceId,
			PrivateIpAddresses: moving, AllowReassignment: aws.Bool(allow)})
		_, _ = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: to.NetworkInterfaceId,
			PrivateIpAddresses: []string{toPrimary}, AllowReassignment: aws.Bool(allow)})
	}
	primary, sec := ipsOf(w.eni(aws.ToString(to.NetworkInterfaceId)))
	if primary != toPrimary || !slices.Equal(sec, moving) {
		t.Errorf("after assigning its own addresses again the ENI holds primary %s and secondary %v, want %s and %v", primary, sec, toPrimary, moving)
	}

	// A primary address never moves, AllowReassignment or not.
	_, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: from.NetworkInterfaceId,
		PrivateIpAddresses: []string{toPrimary}, AllowReassignment: aws.Bool(true)})
	if err == nil {
		t.Errorf("AllowReassignment moved %s, the primary address of %s", toPrimary, aws.ToString(to.NetworkInterfaceId))
	}
	if p, _ := ipsOf(w.eni(aws.ToString(to.NetworkInterfaceId))); p != toPrimary {
		t.Errorf("the primary address of %s is %s, want %s", aws.ToString(to.NetworkInterfaceId), p, toPrimary)
	}
}

// An attached ENI takes at most the instance type's IPv4 addresses per
// interface (t3.micro: 2, the primary included).
func TestAssignPrivateIPAddressesLimit(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1, instanceType: smallType})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{})
	id := aws.ToString(n.NetworkInterfaceId)
	w.attach(id, w.instances[0], 1)
	assign := func(count int32) error {
		_, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
			SecondaryPrivateIpAddressCount: aws.Int32(count)})
		return err
	}
	requireAPIError(t, assign(2), "PrivateIpAddressLimitExceeded", http.StatusBadRequest)
	noErr(t, assign(1), "the one secondary address a t3.micro interface takes")
	requireAPIError(t, assign(1), "PrivateIpAddressLimitExceeded", http.StatusBadRequest)
}

// ModifyNetworkInterfaceAttribute changes one attribute per call:
// description, security groups, or the attachment's DeleteOnTermination.
func TestModifyNetworkInterfaceAttribute(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("before")})
	id := aws.ToString(n.NetworkInterfaceId)
	modify := func(in *ec2.ModifyNetworkInterfaceAttributeInput) error {
		in.NetworkInterfaceId = aws.String(id)
		_, err := w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), in)
		return err
	}

	noErr(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Description: &types.AttributeValue{Value: aws.String("after")}}), "description")
	if got := aws.ToString(w.eni(id).Description); got != "after" {
		t.Errorf("description %q, want after", got)
	}
	if ids, _ := w.eniIDs(filter("description", "after")); !slices.Equal(ids, []string{id}) {
		t.Errorf("description filter after the change matched %v", ids)
	}

	noErr(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Groups: []string{w.sg2}}), "groups")
	if got := groupIDs(w.eni(id).Groups); !slices.Equal(got, []string{w.sg2}) {
		t.Errorf("groups %v, want [%s]", got, w.sg2)
	}
	noErr(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Groups: []string{w.sg, w.sg2}}), "two groups")
	if got := groupIDs(w.eni(id).Groups); !slices.Equal(got, sorted(w.sg, w.sg2)) {
		t.Errorf("groups %v, want %v", got, sorted(w.sg, w.sg2))
	}
	requireAPIError(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Groups: []string{"sg-0123456789abcdef0"}}), "InvalidGroup.NotFound", http.StatusBadRequest)

	if !aws.ToBool(w.eni(id).SourceDestCheck) {
		t.Errorf("a new ENI has SourceDestCheck false, want true")
	}
	noErr(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(false)}}), "source/dest check")
	if aws.ToBool(w.eni(id).SourceDestCheck) {
		t.Errorf("SourceDestCheck is still true after the change")
	}
	if ids, _ := w.eniIDs(filter("source-dest-check", "false")); !slices.Equal(ids, []string{id}) {
		t.Errorf("source-dest-check=false matched %v, want [%s]", ids, id)
	}

	attachment := w.attach(id, w.instances[0], 1)
	if got := w.eni(id).Attachment; got == nil || aws.ToBool(got.DeleteOnTermination) {
		t.Fatalf("an ENI attached with AttachNetworkInterface has DeleteOnTermination %v, want false", got)
	}
	noErr(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Attachment: &types.NetworkInterfaceAttachmentChanges{
		AttachmentId: aws.String(attachment), DeleteOnTermination: aws.Bool(true)}}), "attachment DeleteOnTermination")
	if got := w.eni(id).Attachment; got == nil || !aws.ToBool(got.DeleteOnTermination) {
		t.Errorf("DeleteOnTermination is not true after the change: %+v", got)
	}
	requireAPIError(t, modify(&ec2.ModifyNetworkInterfaceAttributeInput{Attachment: &types.NetworkInterfaceAttachmentChanges{
		AttachmentId: aws.String("eni-attach-0123456789abcdef0"), DeleteOnTermination: aws.Bool(false)}}), "InvalidAttachmentID.NotFound", http.StatusBadRequest)
}

// Attach is immediate; detach goes through "detaching" (the ENI stays
// in-use and cannot be deleted or attached again) before it is available.
func TestAttachDetachLifecycle(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	inst := w.instances[0]
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)

	attachment := w.attach(id, inst, 1)
	got := w.eni(id)
	if got.Status != types.NetworkInterfaceStatusInUse || got.Attachment == nil {
		t.Fatalf("after attach: status %q, attachment %+v", got.Status, got.Attachment)
	}
	a := got.Attachment
	if aws.ToString(a.AttachmentId) != attachment || aws.ToString(a.InstanceId) != inst || aws.ToInt32(a.DeviceIndex) != 1 ||
		a.Status != types.AttachmentStatusAttached {
		t.Errorf("attachment %s/%s/%d/%s, want %s/%s/1/attached", aws.ToString(a.AttachmentId), aws.ToString(a.InstanceId),
			aws.ToInt32(a.DeviceIndex), a.Status, attachment, inst)
	}
	var onInstance []string
	for _, x := range w.instance(inst).NetworkInterfaces {
		onInstance = append(onInstance, aws.ToString(x.NetworkInterfaceId))
	}
	if !slices.Contains(onInstance, id) {
		t.Errorf("DescribeInstances lists interfaces %v, without the attached %s", onInstance, id)
	}

	start := time.Now()
	_, err := w.ec2.DetachNetworkInterface(t.Context(), &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(attachment)})
	noErr(t, err, "DetachNetworkInterface")
	got = w.eni(id)
	if got.Status != types.NetworkInterfaceStatusInUse || got.Attachment == nil || got.Attachment.Status != types.AttachmentStatusDetaching {
		t.Fatalf("right after detach: status %q, attachment %+v; want in-use and detaching", got.Status, got.Attachment)
	}
	_, err = w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	requireAPIError(t, err, "InvalidNetworkInterface.InUse", http.StatusBadRequest)

	waitFor(t, 30*time.Second, "the detached ENI to become available", func() (bool, error) {
		n := w.eni(id)
		return n.Status == types.NetworkInterfaceStatusAvailable && n.Attachment == nil, nil
	})
	t.Logf("detach took about %v", time.Since(start).Round(10*time.Millisecond))

	// Free again: attach elsewhere works, the old attachment ID is gone.
	_, err = w.ec2.DetachNetworkInterface(t.Context(), &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(attachment)})
	requireAPIError(t, err, "InvalidAttachmentID.NotFound", http.StatusBadRequest)
	again := w.attach(id, inst, 2)
	if again == attachment {
		t.Errorf("a new attachment reuses the ID %s", again)
	}
	_, err = w.ec2.DetachNetworkInterface(t.Context(), &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(again)})
	noErr(t, err, "second detach")
	waitFor(t, 30*time.Second, "the ENI to become available again", func() (bool, error) {
		return w.eni(id).Status == types.NetworkInterfaceStatusAvailable, nil
	})
	_, err = w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	noErr(t, err, "DeleteNetworkInterface of a detached ENI")
	_, err = w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", http.StatusBadRequest)
}

// What AttachNetworkInterface, DetachNetworkInterface and
// DeleteNetworkInterface refuse, with EC2's codes.
func TestAttachDetachDeleteErrors(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 2, instanceType: smallType})
	small, other := w.instances[0], w.instances[1]
	free := make([]string, 5) // one available ENI in zone a per attach case
	for i := range free {
		free[i] = aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	}
	attached := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	attachment := w.attach(attached, small, 1)
	inB := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.b.id)}).NetworkInterfaceId)
	primaryAttachment := aws.ToString(w.eni(w.primaryENI(small)).Attachment.AttachmentId)
	otherPrimary := w.primaryENI(other)

	attach := func(eni, inst string, index int32) error {
		_, err := w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(eni),
			InstanceId: aws.String(inst), DeviceIndex: aws.Int32(index)})
		return err
	}
	cases := []struct {
		name string
		call func() error
		code string
	}{
		// AWS: "Instance '...' already has an interface attached at device index '1'."
		{"device index in use", func() error { return attach(free[0], small, 1) }, "InvalidParameterValue"},
		{"device index 0 (the primary's)", func() error { return attach(free[1], other, 0) }, "InvalidParameterValue"},
		// t3.micro takes two interfaces: the primary and the one at index 1.
		{"beyond the instance type's interfaces", func() error { return attach(free[2], small, 2) }, "AttachmentLimitExceeded"},
		{"ENI in another zone", func() error { return attach(inB, other, 1) }, "InvalidParameterCombination"},
		{"ENI already attached", func() error { return attach(attached, other, 1) }, "InvalidNetworkInterface.InUse"},
		{"unknown ENI", func() error { return attach("eni-0123456789abcdef0", other, 1) }, "InvalidNetworkInterfaceID.NotFound"},
		{"unknown instance", func() error { return attach(free[3], "i-0123456789abcdef0", 1) }, "InvalidInstanceID.NotFound"},
		{"detach the primary", func() error {
			return errOf(w.ec2.DetachNetworkInterface(t.Context(), &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String(primaryAttachment)}))
		}, "OperationNotPermitted"},
		{"detach an unknown attachment", func() error {
			return errOf(w.ec2.DetachNetworkInterface(t.Context(), &ec2.DetachNetworkInterfaceInput{AttachmentId: aws.String("eni-attach-0123456789abcdef0")}))
		}, "InvalidAttachmentID.NotFound"},
		{"delete an attached ENI", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(attached)}))
		}, "InvalidNetworkInterface.InUse"},
		{"delete an instance's primary ENI", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(otherPrimary)}))
		}, "InvalidNetworkInterface.InUse"},
		{"delete an unknown ENI", func() error {
			return errOf(w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String("eni-0123456789abcdef0")}))
		}, "InvalidNetworkInterfaceID.NotFound"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireAPIError(t, c.call(), c.code, http.StatusBadRequest)
		})
	}
	// Nothing above changed the attached ENI.
	if a := w.eni(attached).Attachment; a == nil || aws.ToString(a.AttachmentId) != attachment || a.Status != types.AttachmentStatusAttached {
		t.Errorf("the attached ENI changed: %+v", a)
	}
}

// RunInstances gives every instance a primary ENI at device index 0 that
// is deleted on termination and carries the network-interface tags of
// TagSpecifications; DescribeInstances and DescribeNetworkInterfaces agree.
func TestRunInstancesPrimaryENI(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	out, err := w.ec2.RunInstances(t.Context(), &ec2.RunInstancesInput{
		ImageId: aws.String(imageID()), InstanceType: types.InstanceType(largeType), MinCount: aws.Int32(2), MaxCount: aws.Int32(2),
		SubnetId: aws.String(w.a.id), SecurityGroupIds: []string{w.sg2},
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: tags("Name", w.name, "Role", "node")},
			{ResourceType: types.ResourceTypeNetworkInterface, Tags: tags("Role", "primary-eni")},
		},
	})
	noErr(t, err, "RunInstances MinCount=MaxCount=2")
	if len(out.Instances) != 2 {
		t.Fatalf("RunInstances returned %d instances, want 2", len(out.Instances))
	}
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	w.ownInstances(ids...)

	waitFor(t, 60*time.Second, "the instances to run", func() (bool, error) {
		d, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{
			Filters: []types.Filter{filter("vpc-id", w.vpc), filter("instance-state-name", "running")}})
		if err != nil {
			return false, err
		}
		n := 0
		for _, r := range d.Reservations {
			n += len(r.Instances)
		}
		return n == 2, nil
	})

	primaries := map[string]bool{}
	for _, id := range ids {
		inst := w.instance(id)
		if aws.ToString(inst.SubnetId) != w.a.id || aws.ToString(inst.VpcId) != w.vpc || aws.ToString(inst.Placement.AvailabilityZone) != w.a.az {
			t.Errorf("%s: subnet/vpc/zone %s/%s/%s", id, aws.ToString(inst.SubnetId), aws.ToString(inst.VpcId), aws.ToString(inst.Placement.AvailabilityZone))
		}
		if inst.InstanceType != types.InstanceType(largeType) {
			t.Errorf("%s: type %s", id, inst.InstanceType)
		}
		if got := tagMap(inst.Tags); !maps.Equal(got, map[string]string{"Name": w.name, "Role": "node"}) {
			t.Errorf("%s: tags %v", id, got)
		}
		if len(inst.NetworkInterfaces) != 1 {
			t.Fatalf("%s: %d interfaces, want the primary only", id, len(inst.NetworkInterfaces))
		}
		ni := inst.NetworkInterfaces[0]
		if ni.Attachment == nil || aws.ToInt32(ni.Attachment.DeviceIndex) != 0 || !aws.ToBool(ni.Attachment.DeleteOnTermination) {
			t.Errorf("%s: primary attachment %+v, want device index 0 and DeleteOnTermination", id, ni.Attachment)
		}
		pid := aws.ToString(ni.NetworkInterfaceId)
		primaries[pid] = true
		p := w.eni(pid)
		if aws.ToString(p.PrivateIpAddress) != aws.ToString(inst.PrivateIpAddress) {
			t.Errorf("%s: instance IP %s, primary ENI IP %s", id, aws.ToString(inst.PrivateIpAddress), aws.ToString(p.PrivateIpAddress))
		}
		if p.Status != types.NetworkInterfaceStatusInUse || p.Attachment == nil || aws.ToString(p.Attachment.InstanceId) != id ||
			aws.ToInt32(p.Attachment.DeviceIndex) != 0 {
			t.Errorf("%s: primary ENI %s status %q attachment %+v", id, pid, p.Status, p.Attachment)
		}
		if got := groupIDs(p.Groups); !slices.Equal(got, []string{w.sg2}) {
			t.Errorf("%s: primary ENI groups %v, want [%s]", id, got, w.sg2)
		}
		if got := tagMap(p.TagSet); got["Role"] != "primary-eni" {
			t.Errorf("%s: primary ENI tags %v, want Role=primary-eni from TagSpecifications", id, got)
		}
	}
	if len(primaries) != 2 {
		t.Errorf("two instances share primary ENIs: %v", primaries)
	}
	got, err := w.eniIDs(filter("attachment.device-index", "0"))
	noErr(t, err, "primary ENIs by filter")
	if !slices.Equal(got, slices.Sorted(maps.Keys(primaries))) {
		t.Errorf("attachment.device-index=0 matched %v, want %v", got, slices.Sorted(maps.Keys(primaries)))
	}
}

// RunInstances with a ClientToken is idempotent; the same token with
// other parameters is IdempotentParameterMismatch.
func TestRunInstancesClientToken(t *testing.T) {
	w := parallelWorld(t, worldSpec{})
	run := func(typ string) (string, error) {
		out, err := w.ec2.RunInstances(t.Context(), &ec2.RunInstancesInput{ImageId: aws.String(imageID()), InstanceType: types.InstanceType(typ),
			MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(w.a.id), ClientToken: aws.String(w.name)})
		if err != nil {
			return "", err
		}
		id := aws.ToString(out.Instances[0].InstanceId)
		w.ownInstances(id)
		return id, nil
	}
	a, err := run(smallType)
	noErr(t, err, "RunInstances")
	b, err := run(smallType)
	noErr(t, err, "RunInstances retried")
	if a != b {
		t.Fatalf("same ClientToken launched %s and %s", a, b)
	}
	d, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}})
	noErr(t, err, "DescribeInstances")
	if n := len(d.Reservations); n != 1 {
		t.Errorf("the VPC has %d reservations, want 1", n)
	}

	t.Run("same token, other parameters", func(t *testing.T) {
		c, err := run(largeType)
		if err == nil {
			t.Fatalf("RunInstances with a used ClientToken and another InstanceType returned %s (the first launch was %s), want IdempotentParameterMismatch", c, a)
		}
		requireAPIError(t, err, "IdempotentParameterMismatch", http.StatusBadRequest)
	})
}

// DescribeInstances filters.
func TestDescribeInstancesFilters(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 2})
	inB := aws.ToString(w.runInstance(smallType, w.b.id).InstanceId)
	all := sorted(append([]string{inB}, w.instances...)...)
	cases := []struct {
		name    string
		filters []types.Filter
		want    []string
	}{
		{"vpc-id", nil, all},
		{"instance-id", []types.Filter{filter("instance-id", inB)}, []string{inB}},
		{"subnet-id", []types.Filter{filter("subnet-id", w.a.id)}, sorted(w.instances...)},
		{"availability-zone", []types.Filter{filter("availability-zone", w.b.az)}, []string{inB}},
		{"instance-type", []types.Filter{filter("instance-type", smallType)}, []string{inB}},
		{"tag:Name", []types.Filter{filter("tag:Name", w.name)}, all},
		{"network-interface.network-interface-id", []types.Filter{filter("network-interface.network-interface-id", w.primaryENI(inB))}, []string{inB}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{
				Filters: append([]types.Filter{filter("vpc-id", w.vpc)}, c.filters...)})
			noErr(t, err, "DescribeInstances %s", describeFilters(c.filters))
			var got []string
			for _, r := range out.Reservations {
				for _, i := range r.Instances {
					got = append(got, aws.ToString(i.InstanceId))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("DescribeInstances %s = %v, want %v", describeFilters(c.filters), got, c.want)
			}
		})
	}
	_, err := w.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	requireAPIError(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
}

// DescribeInstanceTypes reports the interface limit of each type.
func TestDescribeInstanceTypes(t *testing.T) {
	t.Parallel()
	c := suite.client()
	want := map[string]int32{"t3.micro": 2, "m5.large": 3, "m5.4xlarge": 8}
	out, err := c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"t3.micro", "m5.large", "m5.4xlarge"}})
	noErr(t, err, "DescribeInstanceTypes")
	got := map[string]int32{}
	for _, it := range out.InstanceTypes {
		if it.NetworkInfo == nil {
			t.Fatalf("%s has no NetworkInfo", it.InstanceType)
		}
		got[string(it.InstanceType)] = aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces)
	}
	if !maps.Equal(got, want) {
		t.Errorf("MaximumNetworkInterfaces %v, want %v", got, want)
	}

	out, err = c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"t3.micro", "m5.large"}, Filters: []types.Filter{filter("network-info.maximum-network-interfaces", "3")}})
	noErr(t, err, "DescribeInstanceTypes with a filter")
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].InstanceType != "m5.large" {
		t.Errorf("network-info.maximum-network-interfaces=3 matched %v, want m5.large", out.InstanceTypes)
	}

	_, err = c.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"x9.nonexistent"}})
	requireAPIError(t, err, "InvalidInstanceType", http.StatusBadRequest)
}

// TerminateInstances deletes the ENIs marked DeleteOnTermination (the
// primary, and any other so marked) and detaches the others, which stay
// available.
func TestTerminateInstances(t *testing.T) {
	w := parallelWorld(t, worldSpec{instances: 1})
	inst := w.instances[0]
	primary := w.primaryENI(inst)
	keep := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("keep")}).NetworkInterfaceId)
	drop := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Description: aws.String("drop")}).NetworkInterfaceId)
	w.attach(keep, inst, 1)
	dropAttachment := w.attach(drop, inst, 2)
	_, err := w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{NetworkInterfaceId: aws.String(drop),
		Attachment: &types.NetworkInterfaceAttachmentChanges{AttachmentId: aws.String(dropAttachment), DeleteOnTermination: aws.Bool(true)}})
	noErr(t, err, "setting DeleteOnTermination")

	out, err := w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{inst}})
	noErr(t, err, "TerminateInstances")
	if len(out.TerminatingInstances) != 1 {
		t.Fatalf("TerminateInstances reported %d instances", len(out.TerminatingInstances))
	}
	sc := out.TerminatingInstances[0]
	if sc.PreviousState.Name != types.InstanceStateNameRunning ||
		(sc.CurrentState.Name != types.InstanceStateNameShuttingDown && sc.CurrentState.Name != types.InstanceStateNameTerminated) {
		t.Errorf("state change %s -> %s, want running -> shutting-down", sc.PreviousState.Name, sc.CurrentState.Name)
	}

	gone := func(id string) (bool, error) {
		_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
		if isENINotFound(err) {
			return true, nil
		}
		return false, err
	}
	waitFor(t, 60*time.Second, "the primary ENI to be deleted", func() (bool, error) { return gone(primary) })
	waitFor(t, 60*time.Second, "the DeleteOnTermination ENI to be deleted", func() (bool, error) { return gone(drop) })
	waitFor(t, 60*time.Second, "the other ENI to be detached", func() (bool, error) {
		n := w.eni(keep)
		return n.Status == types.NetworkInterfaceStatusAvailable && n.Attachment == nil, nil
	})
	waitFor(t, 60*time.Second, "the instance to be terminated", func() (bool, error) {
		return w.instance(inst).State.Name == types.InstanceStateNameTerminated, nil
	})

	// Terminating again is harmless; an unknown instance is not.
	out, err = w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{inst}})
	noErr(t, err, "terminating a terminated instance")
	if got := out.TerminatingInstances[0].CurrentState.Name; got != types.InstanceStateNameTerminated {
		t.Errorf("terminated instance reports %s", got)
	}
	_, err = w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	requireAPIError(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)

	// A terminated instance takes no interfaces.
	_, err = w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(keep),
		InstanceId: aws.String(inst), DeviceIndex: aws.Int32(1)})
	requireAPIError(t, err, "IncorrectInstanceState", http.StatusBadRequest)
}
