package emulator

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

type describeNetworkInterfacesResponse struct {
	respMeta
	NetworkInterfaces []xNetworkInterface `xml:"networkInterfaceSet>item"`
	NextToken         string              `xml:"nextToken,omitempty"`
}

type createNetworkInterfaceResponse struct {
	respMeta
	NetworkInterface xNetworkInterface `xml:"networkInterface"`
	ClientToken      string            `xml:"clientToken,omitempty"`
}

type returnResponse struct {
	respMeta
	Return bool `xml:"return"`
}

type attachNetworkInterfaceResponse struct {
	respMeta
	AttachmentID     string `xml:"attachmentId"`
	NetworkCardIndex int    `xml:"networkCardIndex"`
}

type assignPrivateIPAddressesResponse struct {
	respMeta
	NetworkInterfaceID string        `xml:"networkInterfaceId"`
	Assigned           []xPrivateIP  `xml:"assignedPrivateIpAddressesSet>item"`
	AssignedPrefixes   []xIPv4Prefix `xml:"assignedIpv4PrefixSet>item"`
}

func (w *world) eniFields(n *eni) fieldFunc {
	return func(name string) ([]string, bool) {
		if f, ok := eniFieldTable[name]; ok {
			return f(w, n), true
		}
		return w.ownedFields(w.describedTags(&n.resource), name)
	}
}

// eniField gives an ENI's values for one DescribeNetworkInterfaces filter.
type eniField func(w *world, n *eni) []string

// eniFieldTable holds the ENI filters other than owner-id and the tags.
var eniFieldTable = map[string]eniField{
	"network-interface-id": func(_ *world, n *eni) []string { return []string{n.id} },
	"addresses.private-ip-address": func(_ *world, n *eni) []string {
		out := []string{n.primaryIP.String()}
		for _, a := range n.secondaryIPs {
			out = append(out, a.String())
		}
		return out
	},
	"addresses.primary": func(_ *world, n *eni) []string {
		out := []string{"true"}
		for range n.secondaryIPs {
			out = append(out, "false")
		}
		return out
	},
	"private-ip-address":          func(_ *world, n *eni) []string { return []string{n.primaryIP.String()} },
	"private-dns-name":            func(w *world, n *eni) []string { return []string{w.dnsName(n.primaryIP)} },
	"ipv6-addresses.ipv6-address": eniIPv6Addresses,
	"ipv6-address":                eniIPv6Addresses,
	"mac-address":                 func(_ *world, n *eni) []string { return []string{n.mac} },
	"subnet-id":                   func(_ *world, n *eni) []string { return []string{n.subnetID} },
	"vpc-id":                      func(_ *world, n *eni) []string { return []string{n.vpcID} },
	"availability-zone":           func(_ *world, n *eni) []string { return []string{n.az} },
	"availability-zone-id":        func(_ *world, n *eni) []string { return []string{azID(n.az)} },
	"source-dest-check":           func(_ *world, n *eni) []string { return []string{strconv.FormatBool(n.sourceDestCheck)} },
	"status":                      func(_ *world, n *eni) []string { return []string{n.status()} },
	"interface-type":              func(_ *world, n *eni) []string { return []string{n.interfaceType} },
	"description":                 func(_ *world, n *eni) []string { return []string{n.description} },
	"requester-managed":           func(_ *world, n *eni) []string { return []string{strconv.FormatBool(n.requesterManaged)} },
	"group-id":                    func(_ *world, n *eni) []string { return n.groups },
	"group-name": func(w *world, n *eni) []string {
		out := []string{}
		for _, g := range n.groups {
			if sg, ok := w.groups[g]; ok {
				out = append(out, sg.name)
			}
		}
		return out
	},
	"attachment.instance-id":       attachmentField(func(_ *world, a *attachment) string { return a.instanceID }),
	"attachment.instance-owner-id": attachmentField(func(w *world, _ *attachment) string { return w.accountID }),
	"attachment.device-index":      attachmentField(func(_ *world, a *attachment) string { return strconv.Itoa(a.deviceIndex) }),
	"attachment.status":            attachmentField(func(_ *world, a *attachment) string { return a.status }),
	"attachment.attachment-id":     attachmentField(func(_ *world, a *attachment) string { return a.id }),
	"attachment.delete-on-termination": attachmentField(func(_ *world, a *attachment) string {
		return strconv.FormatBool(a.deleteOnTermination)
	}),
}

func eniIPv6Addresses(_ *world, n *eni) []string {
	out := make([]string, len(n.ipv6))
	for i, a := range n.ipv6 {
		out[i] = a.String()
	}
	return out
}

// attachmentField is a filter on the ENI's attachment: an unattached ENI
// has no value for it.
func attachmentField(f func(w *world, a *attachment) string) eniField {
	return func(w *world, n *eni) []string {
		if n.attachment == nil {
			return nil
		}
		return []string{f(w, n.attachment)}
	}
}

// page applies MaxResults/NextToken to items in creation order. seqOf
// gives an item's creation sequence, which is what the token holds.
func page[T any](items []T, seqOf func(T) int64, p params) ([]T, string, *apiError) {
	max, hasMax, err := p.int("MaxResults")
	if err != nil {
		return nil, "", err
	}
	if hasMax && (max < 5 || max > 1000) {
		return nil, "", apiErr("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", max)
	}
	start := 0
	if tok := p.get("NextToken"); tok != "" {
		after, perr := strconv.ParseInt(strings.TrimPrefix(tok, "emu-"), 16, 64)
		if perr != nil || !strings.HasPrefix(tok, "emu-") {
			return nil, "", apiErr("InvalidParameterValue", "The pagination token '%s' is invalid.", tok)
		}
		// Sequences are unique and ascending: start after the token's.
		i, found := slices.BinarySearchFunc(items, after, func(item T, seq int64) int { return cmp.Compare(seqOf(item), seq) })
		if found {
			i++
		}
		start = i
	}
	items = items[start:]
	if !hasMax || len(items) <= max {
		return items, "", nil
	}
	items = items[:max]
	return items, "emu-" + strconv.FormatInt(seqOf(items[len(items)-1]), 16), nil
}

func describeNetworkInterfaces(w *world, p params, _ callEnv) (response, *apiError) {
	enis, next, err := describe(p, describer[*eni, xNetworkInterface]{idParam: "NetworkInterfaceId", all: w.describedENIs(),
		probe: &eni{}, fields: w.eniFields, lookup: w.describedENI, x: w.xENI})
	if err != nil {
		return nil, err
	}
	return &describeNetworkInterfacesResponse{NetworkInterfaces: enis, NextToken: next}, nil
}

// eniRequest is the parsed shape of a CreateNetworkInterface call.
type eniRequest struct {
	subnetID       string
	interfaceType  string
	description    string
	groups         []string
	primaryIP      string
	secondaryIPs   []string
	secondaryCount int
	ipv6Count      int
	ipv6           []string
	prefixCount    int
	prefixes       []string
	tags           map[string]string
}

// fingerprint identifies the parameters of a request for ClientToken
// idempotency: the same token with other parameters is a mismatch.
func (r eniRequest) fingerprint() string {
	return strings.Join([]string{r.subnetID, r.interfaceType, r.description, sortedJoin(r.groups),
		r.primaryIP, strings.Join(r.secondaryIPs, ","), strconv.Itoa(r.secondaryCount), strconv.Itoa(r.ipv6Count),
		strings.Join(r.ipv6, ","), strconv.Itoa(r.prefixCount), strings.Join(r.prefixes, ","), tagString(r.tags)}, "|")
}

func parseENIRequest(p params) (eniRequest, *apiError) {
	r := eniRequest{
		subnetID: p.get("SubnetId"), interfaceType: p.get("InterfaceType"), description: p.get("Description"),
		groups: p.list("SecurityGroupId"), primaryIP: p.get("PrivateIpAddress"), ipv6: nil,
	}
	if r.subnetID == "" {
		return r, apiErr("MissingParameter", "The request must contain the parameter SubnetId")
	}
	for i := 1; i <= p.members("PrivateIpAddresses"); i++ {
		k := "PrivateIpAddresses." + strconv.Itoa(i)
		if p.bool(k + ".Primary") {
			r.primaryIP = p.get(k + ".PrivateIpAddress")
		} else {
			r.secondaryIPs = append(r.secondaryIPs, p.get(k+".PrivateIpAddress"))
		}
	}
	for i := 1; i <= p.members("Ipv6Addresses"); i++ {
		r.ipv6 = append(r.ipv6, p.get("Ipv6Addresses."+strconv.Itoa(i)+".Ipv6Address"))
	}
	for i := 1; i <= p.members("Ipv4Prefix"); i++ {
		r.prefixes = append(r.prefixes, p.get("Ipv4Prefix."+strconv.Itoa(i)+".Ipv4Prefix"))
	}
	var err *apiError
	if r.secondaryCount, _, err = p.int("SecondaryPrivateIpAddressCount"); err != nil {
		return r, err
	}
	if r.ipv6Count, _, err = p.int("Ipv6AddressCount"); err != nil {
		return r, err
	}
	if r.prefixCount, _, err = p.int("Ipv4PrefixCount"); err != nil {
		return r, err
	}
	switch r.interfaceType {
	case "":
		r.interfaceType = "interface"
	case "interface", "branch", "trunk", "efa", "efa-only":
	default:
		return r, apiErr("InvalidParameterValue", "Value (%s) for parameter interfaceType is invalid.", r.interfaceType)
	}
	if r.tags, err = p.tagSpecifications("network-interface"); err != nil {
		return r, err
	}
	return r, nil
}

func createNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	req, err := parseENIRequest(p)
	if err != nil {
		return nil, err
	}
	token := p.get("ClientToken")
	if token != "" {
		if len(token) > 64 {
			return nil, apiErr("InvalidParameterValue", "ClientToken must be at most 64 characters")
		}
		if rec, ok := w.clientTokens[token]; ok {
			if rec.fingerprint != req.fingerprint() {
				return nil, apiErr("IdempotentParameterMismatch",
					"The client token you have provided is associated with a resource that was created with different parameters.")
			}
			resp := &createNetworkInterfaceResponse{ClientToken: token}
			if n, ok := w.enis[rec.eniID]; ok {
				resp.NetworkInterface = w.xENI(n)
			} else {
				// AWS keeps answering with the original result even after
				// the ENI is gone; only the ID is certain then.
				resp.NetworkInterface = xNetworkInterface{
					xInstanceNetworkInterface: xInstanceNetworkInterface{NetworkInterfaceID: rec.eniID, Status: "deleted"},
				}
			}
			return resp, nil
		}
	}
	n, err := w.createENI(req, env)
	if err != nil {
		return nil, err
	}
	if token != "" {
		w.clientTokens[token] = tokenRecord{eniID: n.id, fingerprint: req.fingerprint()}
	}
	if env.visibility > 0 {
		w.unseen[n.id] = env.now.Add(env.visibility)
	}
	return &createNetworkInterfaceResponse{NetworkInterface: w.xENI(n), ClientToken: token}, nil
}

// eniPlan is a CreateNetworkInterface request checked against the world:
// its subnet, groups and parsed explicit prefixes and IPv6 addresses.
type eniPlan struct {
	req      eniRequest
	subnet   *subnet
	groups   []string
	prefixes []netip.Prefix
	ipv6     []netip.Addr
}

// createENI validates a request completely before changing anything, so a
// failed call leaves no trace.
func (w *world) createENI(req eniRequest, _ callEnv) (*eni, *apiError) {
	plan, err := w.planENI(req)
	if err != nil {
		return nil, err
	}
	n := w.buildENI(plan)
	if err := w.allocateENI(n, plan); err != nil {
		w.deleteENI(n)
		return nil, err
	}
	return n, nil
}

func (w *world) planENI(req eniRequest) (eniPlan, *apiError) {
	s, err := lookup(w.subnets, "subnet", req.subnetID)
	if err != nil {
		return eniPlan{}, err
	}
	plan := eniPlan{req: req, subnet: s}
	if plan.groups, err = w.eniGroups(s, req.groups); err != nil {
		return eniPlan{}, err
	}
	explicit := append([]string{}, req.secondaryIPs...)
	if req.primaryIP != "" {
		explicit = append(explicit, req.primaryIP)
	}
	seen, err := w.checkExplicitIPv4(s, explicit)
	if err != nil {
		return eniPlan{}, err
	}
	if plan.prefixes, err = w.checkENIPrefixes(s, req.prefixes, seen); err != nil {
		return eniPlan{}, err
	}
	if plan.ipv6, err = w.checkExplicitIPv6(s, req.ipv6); err != nil {
		return eniPlan{}, err
	}
	if (req.ipv6Count > 0 || len(plan.ipv6) > 0) && !s.ipv6.IsValid() {
		return eniPlan{}, apiErr("InvalidParameterValue", "Subnet %s does not have an IPv6 CIDR block.", s.id)
	}
	need := req.secondaryCount + len(explicit) + 16*(req.prefixCount+len(plan.prefixes))
	if req.primaryIP == "" {
		need++ // the primary address is allocated too
	}
	if w.freeAddresses(s) < need {
		return eniPlan{}, apiErr("InsufficientFreeAddressesInSubnet",
			"The specified subnet %s does not have enough free addresses to satisfy the request.", s.id)
	}
	return plan, nil
}

// eniGroups is the request's security groups, or the VPC's default group
// when it names none; each must be in the subnet's VPC.
func (w *world) eniGroups(s *subnet, groups []string) ([]string, *apiError) {
	if len(groups) == 0 {
		groups = []string{w.defaultGroup(s.vpcID)}
	}
	for _, g := range groups {
		sg, err := lookup(w.groups, "sg", g)
		if err != nil {
			return nil, err
		}
		if sg.vpcID != s.vpcID {
			return nil, apiErr("InvalidParameterValue", "Security group %s and subnet %s belong to different networks.", g, s.id)
		}
	}
	return groups, nil
}

// checkExplicitIPv4 checks that each address is a free IPv4 address of the
// subnet, named once, and returns them as a set.
func (w *world) checkExplicitIPv4(s *subnet, ips []string) (map[netip.Addr]bool, *apiError) {
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !a.Is4() {
			return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter privateIpAddress is invalid.", ip)
		}
		if !s.cidr.Contains(a) {
			return nil, apiErr("InvalidParameterValue", "Address %s does not fall within the subnet's address range", ip)
		}
		if _, used := w.owner(s.vpcID, a); used || seen[a] {
			return nil, apiErr("InvalidIPAddress.InUse", "The specified address is already in use.")
		}
		seen[a] = true
	}
	return seen, nil
}

// checkENIPrefixes parses the explicit prefixes: free /28s of the subnet,
// overlapping neither each other nor the explicit addresses.
func (w *world) checkENIPrefixes(s *subnet, ps []string, addrs map[netip.Addr]bool) ([]netip.Prefix, *apiError) {
	var prefixes []netip.Prefix
	for _, p := range ps {
		pf, perr := netip.ParsePrefix(p)
		if perr != nil || pf.Bits() != 28 || !s.cidr.Contains(pf.Addr()) || pf.Masked() != pf {
			return nil, apiErr("InvalidParameterValue", "Prefix %s is not a /28 inside subnet %s", p, s.id)
		}
		if !w.prefixFree(s.vpcID, pf) || overlapsAny(pf, prefixes, addrs) {
			return nil, apiErr("InvalidIPAddress.InUse", "The prefix %s is already in use.", p)
		}
		prefixes = append(prefixes, pf)
	}
	return prefixes, nil
}

// checkExplicitIPv6 parses the explicit IPv6 addresses: free addresses of
// the subnet's IPv6 range.
func (w *world) checkExplicitIPv6(s *subnet, ips []string) ([]netip.Addr, *apiError) {
	var out []netip.Addr
	for _, ip := range ips {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !a.Is6() || !s.ipv6.IsValid() || !s.ipv6.Contains(a) {
			return nil, apiErr("InvalidParameterValue", "Address %s does not fall within the subnet's IPv6 range", ip)
		}
		if _, used := w.owner(s.vpcID, a); used {
			return nil, apiErr("InvalidIPAddress.InUse", "The specified address is already in use.")
		}
		out = append(out, a)
	}
	return out, nil
}

// buildENI registers the planned ENI with its explicit addresses and
// prefixes, claimed first so that nothing allocated automatically lands on
// them.
func (w *world) buildENI(plan eniPlan) *eni {
	req, s := plan.req, plan.subnet
	n := &eni{
		resource: w.newResource(w.newID("eni"), req.tags), subnetID: s.id, vpcID: s.vpcID, az: s.az,
		interfaceType: req.interfaceType, description: req.description, mac: w.newMAC(), groups: plan.groups,
		sourceDestCheck: true,
	}
	w.enis[n.id] = n
	if req.primaryIP != "" {
		n.primaryIP = netip.MustParseAddr(req.primaryIP)
		w.claim(n, n.primaryIP)
	}
	for _, ip := range req.secondaryIPs {
		a := netip.MustParseAddr(ip)
		n.secondaryIPs = append(n.secondaryIPs, a)
		w.claim(n, a)
	}
	for _, pf := range plan.prefixes {
		w.claimPrefix(n, pf)
	}
	for _, a := range plan.ipv6 {
		n.ipv6 = append(n.ipv6, a)
		w.claim(n, a)
	}
	return n
}

// allocateENI gives n what the request left to the emulator to pick: the
// primary address when none was named, and the counted addresses and
// prefixes.
func (w *world) allocateENI(n *eni, plan eniPlan) *apiError {
	req, s := plan.req, plan.subnet
	if req.primaryIP == "" {
		a, err := w.allocateIP(s)
		if err != nil {
			return err
		}
		n.primaryIP = a
		w.claim(n, a)
	}
	if err := w.addSecondary(n, req.secondaryCount); err != nil {
		return err
	}
	if err := w.addPrefixes(n, req.prefixCount); err != nil {
		return err
	}
	for i := 0; i < req.ipv6Count; i++ {
		a, err := w.allocateIPv6(s)
		if err != nil {
			return err
		}
		n.ipv6 = append(n.ipv6, a)
		w.claim(n, a)
	}
	return nil
}

// overlapsAny reports whether pf overlaps one of the prefixes or contains
// one of the addresses.
func overlapsAny(pf netip.Prefix, prefixes []netip.Prefix, addrs map[netip.Addr]bool) bool {
	for _, q := range prefixes {
		if pf.Overlaps(q) {
			return true
		}
	}
	for a := range addrs {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

func (w *world) addSecondary(n *eni, count int) *apiError {
	s := w.subnets[n.subnetID]
	for i := 0; i < count; i++ {
		a, err := w.allocateIP(s)
		if err != nil {
			return err
		}
		n.secondaryIPs = append(n.secondaryIPs, a)
		w.claim(n, a)
	}
	return nil
}

// addPrefixes allocates count free /28 prefixes of the ENI's subnet, each
// claimed before the next is looked for.
func (w *world) addPrefixes(n *eni, count int) *apiError {
	s := w.subnets[n.subnetID]
	for i := 0; i < count; i++ {
		pf, err := w.allocatePrefix(s)
		if err != nil {
			return err
		}
		w.claimPrefix(n, pf)
	}
	return nil
}

// claimPrefix records that n holds a delegated prefix; its addresses must
// be free.
func (w *world) claimPrefix(n *eni, pf netip.Prefix) {
	n.prefixes = append(n.prefixes, pf)
	for _, a := range prefixAddrs(pf) {
		w.claim(n, a)
	}
}

// defaultGroup returns the VPC's "default" security group, creating it as
// AWS does with every VPC.
func (w *world) defaultGroup(vpcID string) string {
	for _, g := range w.groups {
		if g.vpcID == vpcID && g.name == "default" {
			return g.id
		}
	}
	g := &securityGroup{resource: w.newResource(w.newID("sg"), nil), name: "default", vpcID: vpcID,
		description: "default VPC security group"}
	w.groups[g.id] = g
	return g.id
}

func (w *world) lookupENI(id string) (*eni, *apiError) {
	if err := checkID("eni", id); err != nil {
		return nil, err
	}
	n, ok := w.enis[id]
	if !ok || !w.visible(id) {
		return nil, notFound("eni", id)
	}
	return n, nil
}

// eniParam is the ENI the request's NetworkInterfaceId names.
func (w *world) eniParam(p params) (*eni, *apiError) {
	id, err := p.required("NetworkInterfaceId")
	if err != nil {
		return nil, err
	}
	return w.lookupENI(id)
}

func deleteNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	if n.attachment != nil {
		return nil, apiErr("InvalidNetworkInterface.InUse", "The network interface %s is currently in use.", n.id)
	}
	w.leaveGhost(n, env)
	w.deleteENI(n)
	return &returnResponse{Return: true}, nil
}

func attachNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	eniID, err := p.required("NetworkInterfaceId")
	if err != nil {
		return nil, err
	}
	instanceID, err := p.required("InstanceId")
	if err != nil {
		return nil, err
	}
	index, has, err := p.int("DeviceIndex")
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, apiErr("MissingParameter", "The request must contain the parameter DeviceIndex")
	}
	n, err := w.lookupENI(eniID)
	if err != nil {
		return nil, err
	}
	inst, err := w.lookupInstance(instanceID)
	if err != nil {
		return nil, err
	}
	a, err := w.attach(n, inst, index, false, env)
	if err != nil {
		return nil, err
	}
	w.startAttaching(n, env)
	return &attachNetworkInterfaceResponse{AttachmentID: a.id}, nil
}

// attach checks everything AWS checks before attaching an ENI.
func (w *world) attach(n *eni, inst *instance, index int, deleteOnTermination bool, env callEnv) (*attachment, *apiError) {
	if inst.state != "running" && inst.state != "stopped" {
		return nil, apiErr("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be attached to (%s).", inst.id, inst.state)
	}
	if n.attachment != nil {
		return nil, apiErr("InvalidNetworkInterface.InUse", "Interface: [%s] in use.", n.id)
	}
	if n.az != inst.az {
		return nil, apiErr("InvalidParameterCombination",
			"You may not attach a network interface to an instance if they are not in the same availability zone")
	}
	if n.vpcID != inst.vpcID {
		return nil, apiErr("InvalidParameterCombination", "The network interface and the instance are in different VPCs")
	}
	if n.interfaceType == "branch" {
		return nil, apiErr("InvalidParameterValue", "A branch network interface cannot be attached to an instance directly")
	}
	limit := w.instanceTypes[inst.instanceType].maxENIs
	if index < 0 || index >= 64 {
		return nil, apiErr("InvalidParameterValue", "Value (%d) for parameter deviceIndex is invalid.", index)
	}
	attached := w.attachedTo(inst.id)
	for _, other := range attached {
		if other.attachment.deviceIndex == index {
			return nil, apiErr("InvalidParameterValue", "Instance '%s' already has an interface attached at device index '%d'.", inst.id, index)
		}
	}
	if len(attached)+1 > limit || index >= limit {
		return nil, apiErr("AttachmentLimitExceeded", "Interface count %d exceeds the limit for %s", len(attached)+1, inst.instanceType)
	}
	a := &attachment{id: w.newID("eni-attach"), instanceID: inst.id, deviceIndex: index, status: "attached",
		deleteOnTermination: deleteOnTermination, attachTime: env.now}
	n.attachment = a
	w.attachments[a.id] = n
	return a, nil
}

func detachNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	id, err := p.required("AttachmentId")
	if err != nil {
		return nil, err
	}
	n, err := lookup(w.attachments, "eni-attach", id)
	if err != nil {
		return nil, err
	}
	if n.attachment.deviceIndex == 0 {
		return nil, apiErr("OperationNotPermitted", "The network interface at device index 0 cannot be detached.")
	}
	if n.attachment.status == "detaching" {
		return &returnResponse{Return: true}, nil
	}
	n.attachment.status = "detaching"
	n.attachment.detachDone = env.now.Add(env.detachDelay)
	w.detaching[n.id] = n
	return &returnResponse{Return: true}, nil
}

func modifyNetworkInterfaceAttribute(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	switch {
	case p.has("Attachment.AttachmentId"):
		aid := p.get("Attachment.AttachmentId")
		if n.attachment == nil || n.attachment.id != aid {
			return nil, notFound("eni-attach", aid)
		}
		if p.has("Attachment.DeleteOnTermination") {
			n.attachment.deleteOnTermination = p.bool("Attachment.DeleteOnTermination")
		}
	case p.has("Description.Value"):
		n.description = p.get("Description.Value")
	case len(p.list("SecurityGroupId")) > 0:
		groups := p.list("SecurityGroupId")
		for _, g := range groups {
			sg, err := lookup(w.groups, "sg", g)
			if err != nil {
				return nil, err
			}
			if sg.vpcID != n.vpcID {
				return nil, apiErr("InvalidParameterValue", "Security group %s belongs to another VPC", g)
			}
		}
		n.groups = groups
	case p.has("SourceDestCheck.Value"):
		v := p.get("SourceDestCheck.Value")
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter sourceDestCheck is invalid.", v)
		}
		n.sourceDestCheck = p.bool("SourceDestCheck.Value")
	default:
		return nil, apiErr("MissingParameter", "You must specify an attribute to modify.")
	}
	return &returnResponse{Return: true}, nil
}

// assignPrivateIPAddresses adds secondary addresses and delegated
// prefixes to an ENI. An explicit address held by another ENI of the VPC
// as a secondary address moves to this ENI with AllowReassignment and is
// refused as in use without it; primary addresses and addresses inside a
// delegated prefix never move. An address the ENI already holds as a
// secondary address is assigned already: it is reported, not added twice.
// The call changes nothing unless it succeeds.
func assignPrivateIPAddresses(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	plan, err := w.planAssign(n, p)
	if err != nil {
		return nil, err
	}
	mark := addrMark{secondaryIPs: len(n.secondaryIPs), prefixes: len(n.prefixes)}
	if err := w.applyAssign(n, plan); err != nil {
		// A /28 can be missing even when enough single addresses are free.
		w.undoAssign(n, plan.adds, mark)
		return nil, err
	}
	resp := &assignPrivateIPAddressesResponse{NetworkInterfaceID: n.id}
	for _, a := range append(plan.held, n.secondaryIPs[mark.secondaryIPs:]...) {
		resp.Assigned = append(resp.Assigned, xPrivateIP{PrivateIPAddress: a.String()})
	}
	for _, pf := range n.prefixes[mark.prefixes:] {
		resp.AssignedPrefixes = append(resp.AssignedPrefixes, xIPv4Prefix{IPv4Prefix: pf.String()})
	}
	return resp, nil
}

// addrMove is an explicit address AssignPrivateIpAddresses gives an ENI.
type addrMove struct {
	addr netip.Addr
	from *eni // nil when the address is free
}

// assignPlan is an AssignPrivateIpAddresses request checked against the
// world.
type assignPlan struct {
	count, prefixCount int
	adds               []addrMove   // explicit addresses new to the ENI
	held               []netip.Addr // secondary addresses it holds already
	fresh              int          // adds that take a free address of the subnet
	seen               map[netip.Addr]bool
	prefixes           []netip.Prefix
}

// addrMark is how many secondary addresses and prefixes an ENI had, the
// point an assignment is undone to or reported from.
type addrMark struct{ secondaryIPs, prefixes int }

func (w *world) planAssign(n *eni, p params) (assignPlan, *apiError) {
	plan := assignPlan{seen: map[netip.Addr]bool{}}
	var err *apiError
	if plan.count, _, err = p.int("SecondaryPrivateIpAddressCount"); err != nil {
		return plan, err
	}
	if plan.prefixCount, _, err = p.int("Ipv4PrefixCount"); err != nil {
		return plan, err
	}
	if plan.count < 0 || plan.prefixCount < 0 {
		return plan, apiErr("InvalidParameterValue", "SecondaryPrivateIpAddressCount and Ipv4PrefixCount must not be negative.")
	}
	s := w.subnets[n.subnetID]
	allow := p.bool("AllowReassignment")
	for _, ip := range p.list("PrivateIpAddress") {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !a.Is4() || !s.cidr.Contains(a) {
			return plan, apiErr("InvalidParameterValue", "Address %s does not fall within the subnet's address range", ip)
		}
		if plan.seen[a] {
			continue
		}
		plan.seen[a] = true
		if err := w.planAddress(&plan, n, a, allow); err != nil {
			return plan, err
		}
	}
	if plan.prefixes, err = w.checkAssignPrefixes(s, p.list("Ipv4Prefix"), plan.seen); err != nil {
		return plan, err
	}
	return plan, w.checkAssign(n, plan)
}

// checkAssignPrefixes parses the explicit prefixes: free /28s of the
// subnet, overlapping neither each other nor the explicit addresses.
func (w *world) checkAssignPrefixes(s *subnet, ps []string, addrs map[netip.Addr]bool) ([]netip.Prefix, *apiError) {
	var prefixes []netip.Prefix
	for _, p := range ps {
		pf, perr := netip.ParsePrefix(p)
		if perr != nil || pf.Bits() != 28 || pf.Masked() != pf || !s.cidr.Contains(pf.Addr()) || !w.prefixFree(s.vpcID, pf) ||
			overlapsAny(pf, prefixes, addrs) {
			return nil, apiErr("InvalidParameterValue", "Prefix %s is not a free /28 inside subnet %s", p, s.id)
		}
		prefixes = append(prefixes, pf)
	}
	return prefixes, nil
}

// planAddress decides what assigning the explicit address a to n does:
// take a free address, move another ENI's secondary address, report one n
// holds already, or refuse.
func (w *world) planAddress(plan *assignPlan, n *eni, a netip.Addr, allow bool) *apiError {
	owner, used := w.owner(n.vpcID, a)
	switch {
	case !used:
		plan.adds = append(plan.adds, addrMove{addr: a})
		plan.fresh++
	case owner == n && a == n.primaryIP:
		return apiErr("InvalidParameterValue", "Address %s is the primary private IP address of %s.", a, n.id)
	case owner == n && slices.Contains(n.secondaryIPs, a):
		plan.held = append(plan.held, a)
	case owner == n:
		return apiErr("InvalidIPAddress.InUse", "The specified address %s is part of a prefix delegated to %s.", a, n.id)
	case !allow:
		return apiErr("InvalidIPAddress.InUse", "The specified address %s is already in use.", a)
	case a == owner.primaryIP:
		return apiErr("InvalidIPAddress.InUse", "The specified address %s is the primary private IP address of %s and cannot be reassigned.", a, owner.id)
	case !slices.Contains(owner.secondaryIPs, a):
		return apiErr("InvalidIPAddress.InUse", "The specified address %s is part of a prefix delegated to %s and cannot be reassigned.", a, owner.id)
	default:
		plan.adds = append(plan.adds, addrMove{addr: a, from: owner})
	}
	return nil
}

// checkAssign refuses an empty request and one over the instance type's
// address limit or the subnet's free addresses.
func (w *world) checkAssign(n *eni, plan assignPlan) *apiError {
	if plan.count == 0 && len(plan.seen) == 0 && plan.prefixCount == 0 && len(plan.prefixes) == 0 {
		return apiErr("MissingParameter", "Specify private IP addresses, a count, or prefixes to assign.")
	}
	if limit := w.ipLimit(n); limit > 0 && 1+len(n.secondaryIPs)+plan.count+len(plan.adds) > limit {
		return apiErr("PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.")
	}
	s := w.subnets[n.subnetID]
	if w.freeAddresses(s) < plan.fresh+plan.count+16*(plan.prefixCount+len(plan.prefixes)) {
		return apiErr("InsufficientFreeAddressesInSubnet",
			"The specified subnet %s does not have enough free addresses to satisfy the request.", s.id)
	}
	return nil
}

// applyAssign moves and claims the explicit addresses and prefixes, then
// allocates the counted ones.
func (w *world) applyAssign(n *eni, plan assignPlan) *apiError {
	for _, m := range plan.adds {
		if m.from != nil {
			w.release(m.from, m.addr)
			m.from.secondaryIPs = slices.DeleteFunc(m.from.secondaryIPs, func(a netip.Addr) bool { return a == m.addr })
		}
		n.secondaryIPs = append(n.secondaryIPs, m.addr)
		w.claim(n, m.addr)
	}
	for _, pf := range plan.prefixes {
		w.claimPrefix(n, pf)
	}
	if err := w.addSecondary(n, plan.count); err != nil {
		return err
	}
	return w.addPrefixes(n, plan.prefixCount)
}

// undoAssign puts n back to mark and the moved addresses back on the ENIs
// they came from.
func (w *world) undoAssign(n *eni, adds []addrMove, mark addrMark) {
	for _, a := range n.secondaryIPs[mark.secondaryIPs:] {
		w.release(n, a)
	}
	n.secondaryIPs = n.secondaryIPs[:mark.secondaryIPs]
	for _, pf := range n.prefixes[mark.prefixes:] {
		for _, a := range prefixAddrs(pf) {
			w.release(n, a)
		}
	}
	n.prefixes = n.prefixes[:mark.prefixes]
	for _, m := range adds {
		if m.from != nil {
			m.from.secondaryIPs = append(m.from.secondaryIPs, m.addr)
			w.claim(m.from, m.addr)
		}
	}
}

// ipLimit is the per-interface IPv4 limit of the instance type the ENI is
// attached to, or 0 when it is not attached.
func (w *world) ipLimit(n *eni) int {
	if n.attachment == nil {
		return 0
	}
	if inst, ok := w.instances[n.attachment.instanceID]; ok {
		return w.instanceTypes[inst.instanceType].ipv4PerInterface
	}
	return 0
}

func unassignPrivateIPAddresses(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	drop := map[netip.Addr]bool{}
	for _, ip := range p.list("PrivateIpAddress") {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !slices.Contains(n.secondaryIPs, a) {
			return nil, apiErr("InvalidParameterValue", "Some of the specified addresses are not assigned to interface %s", n.id)
		}
		drop[a] = true
	}
	dropPrefix := map[netip.Prefix]bool{}
	for _, ps := range p.list("Ipv4Prefix") {
		pf, perr := netip.ParsePrefix(ps)
		if perr != nil || !slices.Contains(n.prefixes, pf) {
			return nil, apiErr("InvalidParameterValue", "Prefix %s is not assigned to interface %s", ps, n.id)
		}
		dropPrefix[pf] = true
	}
	if len(drop) == 0 && len(dropPrefix) == 0 {
		return nil, apiErr("MissingParameter", "Specify private IP addresses or prefixes to unassign.")
	}
	n.secondaryIPs = slices.DeleteFunc(n.secondaryIPs, func(a netip.Addr) bool {
		if drop[a] {
			w.release(n, a)
		}
		return drop[a]
	})
	n.prefixes = slices.DeleteFunc(n.prefixes, func(pf netip.Prefix) bool {
		if dropPrefix[pf] {
			for _, a := range prefixAddrs(pf) {
				w.release(n, a)
			}
		}
		return dropPrefix[pf]
	})
	return &returnResponse{Return: true}, nil
}
