package ec2conformance

// Emulator-only behaviour, driven through its admin API (skipped when the
// endpoint has none). Tests that change the configuration get their own
// emulator in-process (isolated) and run serially against an external one.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// Denied actions answer UnauthorizedOperation (403), DryRun included, as a
// missing IAM permission does; other actions are unaffected.
func TestEmulatorDeniedActions(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	configure(t, tg, emulator.Config{Denied: []string{"CreateTags", "DescribeNetworkInterfaces"}})

	createTags := func(dryRun bool) error {
		_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{DryRun: aws.Bool(dryRun), Resources: []string{id}, Tags: tags("k", "v")})
		return err
	}
	requireAPIError(t, createTags(false), "UnauthorizedOperation", http.StatusForbidden)
	requireAPIError(t, createTags(true), "UnauthorizedOperation", http.StatusForbidden)
	_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{DryRun: aws.Bool(true)})
	requireAPIError(t, err, "UnauthorizedOperation", http.StatusForbidden)
	_, err = w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
	requireAPIError(t, err, "UnauthorizedOperation", http.StatusForbidden)
	_, err = w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{DryRun: aws.Bool(true)})
	requireAPIError(t, err, "DryRunOperation", http.StatusPreconditionFailed) // allowed action
	if got := w.tagsOf(id); len(got) != 0 {
		t.Errorf("a denied CreateTags tagged the ENI: %v", got)
	}

	restoreConfig(t, tg)
	noErr(t, createTags(false), "CreateTags once allowed again")
}

// With throttling on, an action's token bucket (here 3 tokens, no refill)
// runs dry: RequestLimitExceeded (503), counted as Throttled. Other
// actions have their own buckets.
func TestEmulatorThrottling(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	admin := requireAdmin(t, tg)
	configure(t, tg, emulator.Config{Throttling: aws.Bool(true), Buckets: map[string]emulator.Bucket{"DescribeVpcs": {Size: 3, Refill: 0}}})
	noErr(t, admin.ResetCounts(t.Context()), "ResetCounts")

	describe := func() error {
		return errOf(w.ec2.DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{VpcIds: []string{w.vpc}}))
	}
	for i := range 3 {
		noErr(t, describe(), "DescribeVpcs %d of a bucket of 3", i+1)
	}
	for range 2 {
		requireAPIError(t, describe(), "RequestLimitExceeded", http.StatusServiceUnavailable)
	}
	_, err := w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{w.a.id}})
	noErr(t, err, "DescribeSubnets has a bucket of its own")

	counts, err := admin.Counts(t.Context())
	noErr(t, err, "Counts")
	c := counts["DescribeVpcs"]
	if c.Calls != 5 || c.Throttled != 2 || c.Errors["RequestLimitExceeded"] != 2 {
		t.Errorf("DescribeVpcs counts %+v, want 5 calls, 2 throttled, 2 RequestLimitExceeded", c)
	}
	if c := counts["DescribeSubnets"]; c.Calls != 1 || c.Throttled != 0 {
		t.Errorf("DescribeSubnets counts %+v, want 1 call, none throttled", c)
	}

	configure(t, tg, emulator.Config{Throttling: aws.Bool(false)})
	noErr(t, describe(), "DescribeVpcs with throttling off")
}

// Injected faults: an error rate of 1 fails every call with the chosen
// code and its HTTP status, before the action (nothing happens) or, with
// AfterApply, after it (the effect is there although the caller saw an
// error, as with a lost response).
func TestEmulatorFaultInjection(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	configure(t, tg, emulator.Config{Faults: map[string]emulator.Fault{
		"DescribeVpcs":           {ErrorRate: 1},
		"DescribeSubnets":        {ErrorRate: 1, ErrorCode: "Unavailable"},
		"CreateTags":             {ErrorRate: 1, AfterApply: true},
		"DeleteNetworkInterface": {ErrorRate: 1, ErrorCode: "InternalError"},
	}})

	_, err := w.ec2.DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{VpcIds: []string{w.vpc}})
	requireAPIError(t, err, "InternalError", http.StatusInternalServerError)
	_, err = w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{w.a.id}})
	requireAPIError(t, err, "Unavailable", http.StatusServiceUnavailable)

	_, err = w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("applied", "anyway")})
	requireAPIError(t, err, "InternalError", http.StatusInternalServerError)
	if got := w.tagsOf(id); got["applied"] != "anyway" {
		t.Errorf("AfterApply: the failed CreateTags did not take effect: tags %v", got)
	}

	_, err = w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	requireAPIError(t, err, "InternalError", http.StatusInternalServerError)
	w.eni(id) // a fault before the action: the ENI is still there

	_, err = w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
	noErr(t, err, "an action without a fault")
}

// The point of ClientToken: a create whose response was lost (an
// after-apply fault) is retried with the same token and yields the ENI
// that was made, not a second one.
func TestEmulatorLostCreateRetriedWithClientToken(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	configure(t, tg, emulator.Config{Faults: map[string]emulator.Fault{"CreateNetworkInterface": {ErrorRate: 1, AfterApply: true}}})
	in := &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), ClientToken: aws.String(w.name)}
	_, err := w.ec2.CreateNetworkInterface(t.Context(), in)
	requireAPIError(t, err, "InternalError", http.StatusInternalServerError)
	ids, err := w.eniIDs()
	noErr(t, err, "listing ENIs")
	if len(ids) != 1 {
		t.Fatalf("after a lost create the VPC has ENIs %v, want the one that was made", ids)
	}
	w.own(ids[0])

	restoreConfig(t, tg)
	out, err := w.ec2.CreateNetworkInterface(t.Context(), in)
	noErr(t, err, "retry with the same ClientToken")
	if got := aws.ToString(out.NetworkInterface.NetworkInterfaceId); got != ids[0] {
		t.Errorf("the retry returned %s, want the ENI of the lost call %s", got, ids[0])
	}
	if ids, _ := w.eniIDs(); len(ids) != 1 {
		t.Errorf("the retry made a second ENI: %v", ids)
	}
}

// With ignoreClientToken on, as moto always does and EC2 once its
// idempotency window has passed, two creates with one token make two ENIs
// and both answers echo the token; turned off, the token is honoured again.
func TestEmulatorIgnoresClientToken(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	in := &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id), ClientToken: aws.String(w.name)}
	create := func() string {
		t.Helper()
		out, err := w.ec2.CreateNetworkInterface(t.Context(), in)
		token := aws.ToString(in.ClientToken)
		noErr(t, err, "CreateNetworkInterface with ClientToken %s", token)
		if got := aws.ToString(out.ClientToken); got != token {
			t.Errorf("the answer's ClientToken is %q, want %q", got, token)
		}
		id := aws.ToString(out.NetworkInterface.NetworkInterfaceId)
		w.own(id)
		return id
	}
	configure(t, tg, emulator.Config{IgnoreClientToken: aws.Bool(true)})
	if a, b := create(), create(); a == b {
		t.Errorf("ignoring ClientToken, two creates with one token both answered %s, want two ENIs", a)
	}

	configure(t, tg, emulator.Config{IgnoreClientToken: aws.Bool(false)})
	other := *in
	other.ClientToken = aws.String(w.name + "-b")
	in = &other
	if a, b := create(), create(); a != b {
		t.Errorf("honouring ClientToken, two creates with one token answered %s and %s, want one ENI", a, b)
	}
	ids, err := w.eniIDs()
	noErr(t, err, "listing ENIs")
	if len(ids) != 3 {
		t.Errorf("the VPC has ENIs %v, want 3: two made ignoring the token, one honouring it", ids)
	}
}

// The admin API counts calls per action, with errors by code, records the
// calls, and resets.
func TestEmulatorCallCounts(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	admin := requireAdmin(t, tg)
	noErr(t, admin.ResetCounts(t.Context()), "ResetCounts")

	for range 3 {
		_, err := w.ec2.DescribeVpcs(t.Context(), &ec2.DescribeVpcsInput{VpcIds: []string{w.vpc}})
		noErr(t, err, "DescribeVpcs")
	}
	for range 2 {
		_, err := w.ec2.DescribeSubnets(t.Context(), &ec2.DescribeSubnetsInput{Filters: []types.Filter{filter("vpc-id", w.vpc)}})
		noErr(t, err, "DescribeSubnets")
	}
	_, err := w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String("eni-0123456789abcdef0")})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", http.StatusBadRequest)

	counts, err := admin.Counts(t.Context())
	noErr(t, err, "Counts")
	want := map[string]emulator.ActionCount{
		"DescribeVpcs":           {Calls: 3},
		"DescribeSubnets":        {Calls: 2},
		"DeleteNetworkInterface": {Calls: 1, Errors: map[string]int{"InvalidNetworkInterfaceID.NotFound": 1}},
	}
	if len(counts) != len(want) {
		t.Errorf("counts for %v, want exactly %v", slices.Sorted(maps.Keys(counts)), slices.Sorted(maps.Keys(want)))
	}
	for action, wc := range want {
		c := counts[action]
		if c.Calls != wc.Calls || c.Throttled != 0 || !maps.Equal(c.Errors, wc.Errors) {
			t.Errorf("%s counts %+v, want %+v", action, c, wc)
		}
	}

	calls, err := admin.Calls(t.Context())
	noErr(t, err, "Calls")
	if len(calls) != 6 {
		t.Fatalf("recorded %d calls, want 6", len(calls))
	}
	last := calls[len(calls)-1]
	if last.Action != "DeleteNetworkInterface" || last.Code != "InvalidNetworkInterfaceID.NotFound" ||
		!slices.Equal(last.Params["NetworkInterfaceId"], []string{"eni-0123456789abcdef0"}) {
		t.Errorf("last recorded call %+v", last)
	}

	noErr(t, admin.ResetCounts(t.Context()), "ResetCounts")
	counts, err = admin.Counts(t.Context())
	noErr(t, err, "Counts after reset")
	if len(counts) != 0 {
		t.Errorf("counts after reset: %v", counts)
	}
}

// A world loaded through the admin API is what DescribeNetworkInterfaces
// shows: pods' secondary IPs on an instance's primary ENI, branch ENIs,
// delegated prefixes, IPv6 addresses and seeded attachments.
func TestEmulatorWorldLoad(t *testing.T) {
	t.Parallel() // adds to the world, changes no configuration
	admin := requireAdmin(t, suite)
	c := suite.client()
	name := uniqueName(t)
	block, k := suite.nets.block()
	base := block.Addr().As4()
	sub := netip.PrefixFrom(netip.AddrFrom4(base), 22)
	at := func(last byte) string { b := base; b[3] = last; return netipString(b) }
	prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], base[2] + 2, 0}), 28).String()
	ipv6CIDR := fmt.Sprintf("2600:1f18:1:%x::/64", k)
	// Canonical (RFC 5952), as EC2 answers and matches it: block 0 would
	// otherwise be "2600:1f18:1:0::10".
	ipv6Addr := netip.MustParseAddr(fmt.Sprintf("2600:1f18:1:%x::10", k)).String()

	res, err := admin.Load(t.Context(), emulator.World{
		VPCs:           []emulator.VPCSpec{{Name: name, CIDR: block.String()}},
		Subnets:        []emulator.SubnetSpec{{Name: name + "-a", VPC: name, CIDR: sub.String(), AvailabilityZone: suite.region + "a", IPv6CIDR: ipv6CIDR}},
		SecurityGroups: []emulator.SecurityGroupSpec{{Name: name + "-sg", VPC: name}},
		Instances: []emulator.InstanceSpec{{Name: name + "-node", Type: largeType, Subnet: name + "-a", SecurityGroups: []string{name + "-sg"},
			PrivateIP: at(10), SecondaryIPs: []string{at(11), at(12)}, SecondaryIPCount: 2}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{
			{Subnet: name + "-a", InterfaceType: "branch", SecurityGroups: []string{name + "-sg"}, Description: "branch", Count: 3},
			{Subnet: name + "-a", Description: "prefixes", IPv4Prefixes: []string{prefix}, IPv4PrefixCount: 1},
			{Subnet: name + "-a", Description: "attached", Instance: name + "-node", DeviceIndex: 1, DeleteOnTermination: true,
				Tags: map[string]string{"Role": "secondary"}},
			{Subnet: name + "-a", Description: "ipv6", IPv6Addresses: []string{ipv6Addr}},
		},
	})
	noErr(t, err, "loading the world")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var instances, enis []string
		for _, i := range res.Instances {
			instances = append(instances, i.ID)
		}
		for _, n := range res.NetworkInterfaces {
			enis = append(enis, n.ID)
		}
		release(ctx, c, instances, enis)
	})
	if len(res.VPCs) != 1 || len(res.Instances) != 1 || len(res.NetworkInterfaces) != 6 {
		t.Fatalf("Load returned %+v", res)
	}
	vpc, node := res.VPCs[0], res.Instances[0]
	if node.PrivateIP != at(10) || len(node.SecondaryIPs) != 4 || !slices.Contains(node.SecondaryIPs, at(11)) {
		t.Errorf("loaded instance %+v, want primary %s and 4 secondary IPs including %s", node, at(10), at(11))
	}

	describe := func(filters ...types.Filter) []types.NetworkInterface {
		t.Helper()
		out, err := c.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{
			Filters: append([]types.Filter{filter("vpc-id", vpc)}, filters...)})
		noErr(t, err, "DescribeNetworkInterfaces %s", describeFilters(filters))
		return out.NetworkInterfaces
	}
	ids := func(ns []types.NetworkInterface) []string {
		var out []string
		for _, n := range ns {
			out = append(out, aws.ToString(n.NetworkInterfaceId))
		}
		slices.Sort(out)
		return out
	}

	if got := ids(describe()); len(got) != 7 {
		t.Errorf("the loaded VPC has ENIs %v, want 7 (primary, 3 branch, prefixes, attached, ipv6)", got)
	}
	if got := ids(describe(filter("ipv6-addresses.ipv6-address", ipv6Addr))); !slices.Equal(got, []string{res.NetworkInterfaces[5].ID}) {
		t.Errorf("ipv6-addresses.ipv6-address %s matched %v, want %s", ipv6Addr, got, res.NetworkInterfaces[5].ID)
	}
	for _, ip := range append([]string{at(10)}, node.SecondaryIPs...) {
		if got := ids(describe(filter("addresses.private-ip-address", ip))); !slices.Equal(got, []string{node.PrimaryENI}) {
			t.Errorf("addresses.private-ip-address %s matched %v, want the primary ENI %s", ip, got, node.PrimaryENI)
		}
	}
	var branches []string
	for _, n := range res.NetworkInterfaces[:3] {
		branches = append(branches, n.ID)
	}
	slices.Sort(branches)
	if got := ids(describe(filter("interface-type", "branch"))); !slices.Equal(got, branches) {
		t.Errorf("interface-type=branch matched %v, want %v", got, branches)
	}
	if got := ids(describe(filter("interface-type", "branch"), filter("status", "available"))); len(got) != 3 {
		t.Errorf("branch ENIs are not available: %v", got)
	}

	pn := describe(filter("description", "prefixes"))
	if len(pn) != 1 {
		t.Fatalf("description=prefixes matched %d ENIs", len(pn))
	}
	var prefixes []string
	for _, p := range pn[0].Ipv4Prefixes {
		prefixes = append(prefixes, aws.ToString(p.Ipv4Prefix))
	}
	if len(prefixes) != 2 || !slices.Contains(prefixes, prefix) {
		t.Errorf("prefixes %v, want %s and one more", prefixes, prefix)
	}

	an := describe(filter("attachment.instance-id", node.ID), filter("attachment.device-index", "1"))
	if len(an) != 1 || aws.ToString(an[0].NetworkInterfaceId) != res.NetworkInterfaces[4].ID ||
		!aws.ToBool(an[0].Attachment.DeleteOnTermination) || tagMap(an[0].TagSet)["Role"] != "secondary" {
		t.Errorf("attached ENI %+v, want %s at index 1 with DeleteOnTermination and Role=secondary", an, res.NetworkInterfaces[4].ID)
	}
	if got := ids(describe(filter("tag:Name", name+"-node"))); len(got) != 0 {
		t.Errorf("instance tags leaked to ENIs: %v", got)
	}

	out, err := c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: []types.Filter{filter("tag:Name", name+"-node")}})
	noErr(t, err, "DescribeInstances of the loaded instance")
	if len(out.Reservations) != 1 || aws.ToString(out.Reservations[0].Instances[0].InstanceId) != node.ID ||
		len(out.Reservations[0].Instances[0].NetworkInterfaces) != 2 {
		t.Errorf("DescribeInstances tag:Name=%s: %+v", name+"-node", out.Reservations)
	}
}

// lagDelay is the eventual-consistency delay these tests configure: long
// enough for the checks right after a write to run inside it.
const lagDelay = 1500 * time.Millisecond

func lag(d time.Duration) *emulator.Duration { return &emulator.Duration{Duration: d} }

// EC2 is eventually consistent for tags: right after CreateTags or
// DeleteTags succeeds, DescribeNetworkInterfaces (its tags and tag
// filters) and DescribeTags may still show the tags from before. The
// write itself took effect: a conditional DeleteTags by the writer acts
// on the new value at once. Describe catches up, in order.
func TestEmulatorTagsVisibleLate(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{})
	configure(t, tg, emulator.Config{TagDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", w.name)}).NetworkInterfaceId)
	if got := tagMap(w.eni(id).TagSet); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Fatalf("tags given at creation are not lagged: got %v", got)
	}

	_, err := w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("App", "one", "Team", "a")})
	noErr(t, err, "CreateTags")
	// The writer's own next write acts on the new tags: Team=a is there to
	// be deleted by value although nobody can see it yet.
	_, err = w.ec2.DeleteTags(t.Context(), &ec2.DeleteTagsInput{Resources: []string{id}, Tags: tags("Team", "a")})
	noErr(t, err, "DeleteTags Team=a")
	if got := tagMap(w.eni(id).TagSet); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Errorf("right after the writes DescribeNetworkInterfaces shows %v, want the tags from before", got)
	}
	if got := w.tagsOf(id); !maps.Equal(got, map[string]string{"Owner": w.name}) {
		t.Errorf("right after the writes DescribeTags shows %v, want the tags from before", got)
	}
	if ids, err := w.eniIDs(filter("tag:App", "one")); err != nil || len(ids) != 0 {
		t.Errorf("the filter tag:App=one matched %v (%v) before the tag is visible", ids, err)
	}

	want := map[string]string{"Owner": w.name, "App": "one"}
	waitFor(t, 3*lagDelay, "the tags to become visible", func() (bool, error) {
		got := tagMap(w.eni(id).TagSet)
		if _, team := got["Team"]; team && got["App"] != "one" {
			t.Fatalf("Describe showed %v: the delete before the create", got)
		}
		return maps.Equal(got, want), nil
	})
	if got := w.tagsOf(id); !maps.Equal(got, want) {
		t.Errorf("DescribeTags shows %v once settled, want %v", got, want)
	}
	if ids, err := w.eniIDs(filter("tag:App", "one")); err != nil || len(ids) != 1 {
		t.Errorf("the filter tag:App=one matched %v (%v) once settled, want %s", ids, err, id)
	}
}

// AttachNetworkInterface answers at once, and the attachment is
// "attaching" for a while before it is "attached". The ENI is in use
// meanwhile: a second attach is refused.
func TestEmulatorAttachingBeforeAttached(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{instances: 1})
	configure(t, tg, emulator.Config{AttachDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	aid := w.attach(id, w.instances[0], 1)
	n := w.eni(id)
	if n.Attachment == nil || n.Attachment.Status != types.AttachmentStatusAttaching || aws.ToString(n.Attachment.AttachmentId) != aid {
		t.Fatalf("right after the attach the ENI's attachment is %+v, want %s attaching", n.Attachment, aid)
	}
	if n.Status != types.NetworkInterfaceStatusInUse {
		t.Errorf("an attaching ENI is %q, want in-use", n.Status)
	}
	_, err := w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(id), InstanceId: aws.String(w.instances[0]), DeviceIndex: aws.Int32(2)})
	requireAPIError(t, err, "InvalidNetworkInterface.InUse", 400)
	waitFor(t, 3*lagDelay, "the attachment to be attached", func() (bool, error) {
		a := w.eni(id).Attachment
		return a != nil && a.Status == types.AttachmentStatusAttached, nil
	})
}

// A deleted ENI may still be described for a while; every other call
// knows it is gone at once (a second delete, tags, attach: NotFound).
func TestEmulatorDeletedENIDescribedLate(t *testing.T) {
	tg := isolated(t)
	w := newWorld(t, tg, worldSpec{instances: 1})
	configure(t, tg, emulator.Config{DeleteDelay: lag(lagDelay)})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{
		TagSpecifications: tagSpec(types.ResourceTypeNetworkInterface, "Owner", w.name)}).NetworkInterfaceId)
	_, err := w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	noErr(t, err, "DeleteNetworkInterface")

	if n := w.eni(id); tagMap(n.TagSet)["Owner"] != w.name {
		t.Errorf("the deleted ENI is described with tags %v", tagMap(n.TagSet))
	}
	if ids, err := w.eniIDs(filter("tag:Owner", w.name)); err != nil || len(ids) != 1 {
		t.Errorf("listing right after the delete found %v (%v), want the deleted ENI still", ids, err)
	}
	_, err = w.ec2.DeleteNetworkInterface(t.Context(), &ec2.DeleteNetworkInterfaceInput{NetworkInterfaceId: aws.String(id)})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	_, err = w.ec2.CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags("App", "x")})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)
	_, err = w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{
		NetworkInterfaceId: aws.String(id), InstanceId: aws.String(w.instances[0]), DeviceIndex: aws.Int32(1)})
	requireAPIError(t, err, "InvalidNetworkInterfaceID.NotFound", 400)

	waitFor(t, 3*lagDelay, "the deleted ENI to be gone from Describe", func() (bool, error) {
		_, err := w.ec2.DescribeNetworkInterfaces(t.Context(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{id}})
		if err != nil && !isENINotFound(err) {
			return false, err
		}
		return err != nil, nil
	})
	if ids, err := w.eniIDs(filter("tag:Owner", w.name)); err != nil || len(ids) != 0 {
		t.Errorf("listing after the delay found %v (%v), want nothing", ids, err)
	}
}
