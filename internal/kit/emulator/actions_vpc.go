package emulator

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
)

type createVpcResponse struct {
	respMeta
	Vpc xVpc `xml:"vpc"`
}

type describeVpcsResponse struct {
	respMeta
	Vpcs      []xVpc `xml:"vpcSet>item"`
	NextToken string `xml:"nextToken,omitempty"`
}

type createSubnetResponse struct {
	respMeta
	Subnet xSubnet `xml:"subnet"`
}

type describeSubnetsResponse struct {
	respMeta
	Subnets   []xSubnet `xml:"subnetSet>item"`
	NextToken string    `xml:"nextToken,omitempty"`
}

type createSecurityGroupResponse struct {
	respMeta
	GroupID string `xml:"groupId"`
	Tags    []xTag `xml:"tagSet>item"`
}

type describeSecurityGroupsResponse struct {
	respMeta
	Groups    []xSecurityGroup `xml:"securityGroupInfo>item"`
	NextToken string           `xml:"nextToken,omitempty"`
}

func (w *world) xVpc(v *vpc) xVpc {
	x := xVpc{VpcID: v.id, State: "available", CidrBlock: v.cidr.String(), OwnerID: w.accountID, Tags: xTags(v.tags)}
	if v.ipv6.IsValid() {
		a := xIPv6CidrAssociation{AssociationID: "vpc-cidr-assoc-" + v.id[len("vpc-"):], Ipv6CidrBlock: v.ipv6.String()}
		a.State.State = "associated"
		x.Ipv6CidrBlocks = []xIPv6CidrAssociation{a}
	}
	return x
}

// amazonIPv6Block is the /56 an Amazon-provided IPv6 block of the VPC
// created seq-th gets: 2600:1f13::/32 split by seq, so no two VPCs share one.
func amazonIPv6Block(seq int64) netip.Prefix {
	a := netip.MustParseAddr("2600:1f13::").As16()
	a[4], a[5], a[6] = byte(seq>>16), byte(seq>>8), byte(seq)
	return netip.PrefixFrom(netip.AddrFrom16(a), 56)
}

func (w *world) xSecurityGroup(g *securityGroup) xSecurityGroup {
	return xSecurityGroup{OwnerID: w.accountID, GroupID: g.id, GroupName: g.name, GroupDescription: g.description,
		VpcID: g.vpcID, Tags: xTags(g.tags)}
}

// newVPC validates and creates a VPC with its default security group and,
// when ipv6 is set, an Amazon-provided IPv6 block.
func (w *world) newVPC(id, cidr string, tags map[string]string, ipv6 bool) (*vpc, *apiError) {
	pf, perr := netip.ParsePrefix(cidr)
	if perr != nil || !pf.Addr().Is4() || pf.Bits() < 16 || pf.Bits() > 28 {
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter cidrBlock is invalid. The CIDR block must be an IPv4 block between /16 and /28.", cidr)
	}
	if err := validateTags(nil, tags); err != nil {
		return nil, err
	}
	var err *apiError
	id, err = w.pickID("vpc", id)
	if err != nil {
		return nil, err
	}
	v := &vpc{resource: w.newResource(id, tags), cidr: pf.Masked()}
	if ipv6 {
		v.ipv6 = amazonIPv6Block(v.seq)
	}
	w.vpcs[v.id] = v
	w.defaultGroup(v.id)
	return v, nil
}

// associateCIDR adds a secondary IPv4 CIDR block to v: /16 to /28, not
// overlapping the VPC's others, at most five blocks in all (AWS's
// default quota).
func (v *vpc) associateCIDR(cidr string) *apiError {
	pf, perr := netip.ParsePrefix(cidr)
	if perr != nil || !pf.Addr().Is4() || pf.Bits() < 16 || pf.Bits() > 28 {
		return apiErr("InvalidParameterValue", "Value (%s) for parameter cidrBlock is invalid. The CIDR block must be an IPv4 block between /16 and /28.", cidr)
	}
	pf = pf.Masked()
	if len(v.secondary) >= 4 {
		return apiErr("CidrLimitExceeded", "The maximum number of CIDR blocks for VPC %s has been reached.", v.id)
	}
	for _, c := range append([]netip.Prefix{v.cidr}, v.secondary...) {
		if c.Overlaps(pf) {
			return apiErr("InvalidVpc.Range", "The CIDR '%s' overlaps with a CIDR block of VPC %s.", cidr, v.id)
		}
	}
	v.secondary = append(v.secondary, pf)
	return nil
}

func createVpc(w *world, p params, _ callEnv) (response, *apiError) {
	tags, err := p.tagSpecifications("vpc")
	if err != nil {
		return nil, err
	}
	cidr, err := p.required("CidrBlock")
	if err != nil {
		return nil, err
	}
	v, err := w.newVPC("", cidr, tags, p.bool("AmazonProvidedIpv6CidrBlock"))
	if err != nil {
		return nil, err
	}
	return &createVpcResponse{Vpc: w.xVpc(v)}, nil
}

func describeVpcs(w *world, p params, _ callEnv) (response, *apiError) {
	fields := func(v *vpc) fieldFunc {
		return func(name string) ([]string, bool) {
			switch name {
			case "vpc-id":
				return []string{v.id}, true
			case "cidr":
				return []string{v.cidr.String()}, true
			case "cidr-block-association.cidr-block":
				out := []string{v.cidr.String()}
				for _, c := range v.secondary {
					out = append(out, c.String())
				}
				return out, true
			case "state":
				return []string{"available"}, true
			case "is-default":
				return []string{"false"}, true
			}
			return w.ownedFields(v.tags, name)
		}
	}
	vpcs, next, err := describe(p, describer[*vpc, xVpc]{idParam: "VpcId", all: slices.Collect(maps.Values(w.vpcs)), probe: &vpc{},
		fields: fields, lookup: byID(w.vpcs, "vpc"), x: w.xVpc})
	if err != nil {
		return nil, err
	}
	return &describeVpcsResponse{Vpcs: vpcs, NextToken: next}, nil
}

// describer is what describe needs to know of one resource type.
type describer[T interface{ sequence() int64 }, X any] struct {
	idParam string // the action's list of IDs, e.g. "VpcId"
	all     []T
	// probe is an empty resource used to reject unknown filter names even
	// when nothing would be matched against them.
	probe  T
	fields func(T) fieldFunc
	lookup func(string) (T, *apiError)
	x      func(T) X // a match as the response has it
}

// describe is the common shape of the Describe* actions: by IDs or all,
// then filters, then pagination in creation order, each match answered
// as d.x makes it.
func describe[T interface{ sequence() int64 }, X any](p params, d describer[T, X]) ([]X, string, *apiError) {
	seqOf := T.sequence
	filters, err := p.filters()
	if err != nil {
		return nil, "", err
	}
	if err := validateFilters(filters, d.fields(d.probe)); err != nil {
		return nil, "", err
	}
	ids := p.list(d.idParam)
	if len(ids) > 0 && p.has("MaxResults") {
		return nil, "", apiErr("InvalidParameterCombination", "The parameter %s cannot be used with the parameter MaxResults", d.idParam)
	}
	candidates := d.all
	if len(ids) > 0 {
		candidates = nil
		for _, id := range ids {
			r, err := d.lookup(id)
			if err != nil {
				return nil, "", err
			}
			candidates = append(candidates, r)
		}
	}
	slices.SortFunc(candidates, func(a, b T) int { return cmp.Compare(seqOf(a), seqOf(b)) })
	var matched []T
	for _, r := range candidates {
		if ok, _ := matchAll(filters, d.fields(r)); ok {
			matched = append(matched, r)
		}
	}
	matched, next, err := page(matched, seqOf, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]X, len(matched))
	for i, r := range matched {
		out[i] = d.x(r)
	}
	return out, next, nil
}

// byID is describe's lookup of resources kept in one map.
func byID[T any](resources map[string]T, prefix string) func(string) (T, *apiError) {
	return func(id string) (T, *apiError) { return lookup(resources, prefix, id) }
}

// subnetRequest is the shape of a CreateSubnet call (or a seeded subnet);
// an empty id is picked, an empty az is the region's first.
type subnetRequest struct {
	id, vpcID, cidr, ipv6, az string
	tags                      map[string]string
}

// newSubnet validates and creates a subnet inside its VPC's CIDR.
func (w *world) newSubnet(r subnetRequest) (*subnet, *apiError) {
	v, err := lookup(w.vpcs, "vpc", r.vpcID)
	if err != nil {
		return nil, err
	}
	pf, perr := netip.ParsePrefix(r.cidr)
	if perr != nil || !pf.Addr().Is4() || pf.Bits() < 16 || pf.Bits() > 28 {
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter cidrBlock is invalid.", r.cidr)
	}
	pf = pf.Masked()
	if !v.holds(pf) {
		return nil, apiErr("InvalidSubnet.Range", "The CIDR '%s' is invalid.", r.cidr)
	}
	for _, s := range w.subnets {
		if s.vpcID == r.vpcID && s.cidr.Overlaps(pf) {
			return nil, apiErr("InvalidSubnet.Conflict", "The CIDR '%s' conflicts with another subnet", r.cidr)
		}
	}
	az := r.az
	if az == "" {
		az = w.region + "a"
	}
	if len(az) != len(w.region)+1 || az[:len(w.region)] != w.region {
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter availabilityZone is invalid. Subnets can currently only be created in the following availability zones: %sa, %sb, %sc.", az, w.region, w.region, w.region)
	}
	v6, err := v.subnetIPv6(r.ipv6)
	if err != nil {
		return nil, err
	}
	if err := validateTags(nil, r.tags); err != nil {
		return nil, err
	}
	id, err := w.pickID("subnet", r.id)
	if err != nil {
		return nil, err
	}
	s := &subnet{resource: w.newResource(id, r.tags), vpcID: r.vpcID, az: az, cidr: pf, ipv6: v6.Masked()}
	w.subnets[s.id] = s
	return s, nil
}

// subnetIPv6 parses a subnet's IPv6 CIDR in v (zero for ""). A VPC
// without an Amazon-provided block takes any block, so worlds may name
// fixed addresses; one with a block holds only its /64s.
func (v *vpc) subnetIPv6(cidr string) (netip.Prefix, *apiError) {
	if cidr == "" {
		return netip.Prefix{}, nil
	}
	v6, perr := netip.ParsePrefix(cidr)
	if perr != nil || !v6.Addr().Is6() {
		return netip.Prefix{}, apiErr("InvalidParameterValue", "Value (%s) for parameter ipv6CidrBlock is invalid.", cidr)
	}
	if v.ipv6.IsValid() && (v6.Bits() != 64 || !v.ipv6.Contains(v6.Addr())) {
		return netip.Prefix{}, apiErr("InvalidSubnet.Range", "The IPv6 CIDR '%s' is not a /64 of VPC %s's block %s.", cidr, v.id, v.ipv6)
	}
	return v6, nil
}

func createSubnet(w *world, p params, _ callEnv) (response, *apiError) {
	tags, err := p.tagSpecifications("subnet")
	if err != nil {
		return nil, err
	}
	vpcID, err := p.required("VpcId")
	if err != nil {
		return nil, err
	}
	cidr, err := p.required("CidrBlock")
	if err != nil {
		return nil, err
	}
	s, err := w.newSubnet(subnetRequest{vpcID: vpcID, cidr: cidr, ipv6: p.get("Ipv6CidrBlock"), az: p.get("AvailabilityZone"), tags: tags})
	if err != nil {
		return nil, err
	}
	return &createSubnetResponse{Subnet: w.xSubnet(s)}, nil
}

func describeSubnets(w *world, p params, _ callEnv) (response, *apiError) {
	fields := func(s *subnet) fieldFunc {
		return func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{s.id}, true
			case "vpc-id":
				return []string{s.vpcID}, true
			case "availability-zone":
				return []string{s.az}, true
			case "availability-zone-id":
				return []string{azID(s.az)}, true
			case "cidr-block", "cidr":
				return []string{s.cidr.String()}, true
			case "state":
				return []string{"available"}, true
			case "default-for-az":
				return []string{"false"}, true
			}
			return w.ownedFields(s.tags, name)
		}
	}
	subnets, next, err := describe(p, describer[*subnet, xSubnet]{idParam: "SubnetId", all: slices.Collect(maps.Values(w.subnets)),
		probe: &subnet{}, fields: fields, lookup: byID(w.subnets, "subnet"), x: w.xSubnet})
	if err != nil {
		return nil, err
	}
	return &describeSubnetsResponse{Subnets: subnets, NextToken: next}, nil
}

// newSecurityGroup validates and creates a security group.
func (w *world) newSecurityGroup(id, name, vpcID, description string, tags map[string]string) (*securityGroup, *apiError) {
	if name == "" {
		return nil, apiErr("MissingParameter", "The request must contain the parameter GroupName")
	}
	if _, err := lookup(w.vpcs, "vpc", vpcID); err != nil {
		return nil, err
	}
	for _, g := range w.groups {
		if g.vpcID == vpcID && g.name == name {
			return nil, apiErr("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, vpcID)
		}
	}
	if err := validateTags(nil, tags); err != nil {
		return nil, err
	}
	var err *apiError
	id, err = w.pickID("sg", id)
	if err != nil {
		return nil, err
	}
	g := &securityGroup{resource: w.newResource(id, tags), name: name, vpcID: vpcID, description: description}
	w.groups[g.id] = g
	return g, nil
}

func createSecurityGroup(w *world, p params, _ callEnv) (response, *apiError) {
	tags, err := p.tagSpecifications("security-group")
	if err != nil {
		return nil, err
	}
	desc, err := p.required("GroupDescription")
	if err != nil {
		return nil, err
	}
	vpcID, err := p.required("VpcId")
	if err != nil {
		return nil, err
	}
	g, err := w.newSecurityGroup("", p.get("GroupName"), vpcID, desc, tags)
	if err != nil {
		return nil, err
	}
	return &createSecurityGroupResponse{GroupID: g.id, Tags: xTags(g.tags)}, nil
}

func describeSecurityGroups(w *world, p params, _ callEnv) (response, *apiError) {
	fields := func(g *securityGroup) fieldFunc {
		return func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{g.id}, true
			case "group-name":
				return []string{g.name}, true
			case "vpc-id":
				return []string{g.vpcID}, true
			case "description":
				return []string{g.description}, true
			}
			return w.ownedFields(g.tags, name)
		}
	}
	all := slices.Collect(maps.Values(w.groups))
	// GroupName.N selects by name (default VPC semantics in AWS); model it
	// as a name filter across VPCs.
	if names := p.list("GroupName"); len(names) > 0 {
		var byName []*securityGroup
		for _, g := range all {
			for _, n := range names {
				if g.name == n {
					byName = append(byName, g)
				}
			}
		}
		if len(byName) == 0 {
			return nil, apiErr("InvalidGroup.NotFound", "The security group '%s' does not exist", names[0])
		}
		all = byName
	}
	groups, next, err := describe(p, describer[*securityGroup, xSecurityGroup]{idParam: "GroupId", all: all, probe: &securityGroup{},
		fields: fields, lookup: byID(w.groups, "sg"), x: w.xSecurityGroup})
	if err != nil {
		return nil, err
	}
	return &describeSecurityGroupsResponse{Groups: groups, NextToken: next}, nil
}
