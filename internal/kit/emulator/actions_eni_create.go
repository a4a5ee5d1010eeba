package emulator

import (
	"net/netip"
	"strconv"
	"strings"
)

type createNetworkInterfaceResponse struct {
	respMeta
	NetworkInterface xNetworkInterface `xml:"networkInterface"`
	ClientToken      string            `xml:"clientToken,omitempty"`
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
	ipv6PrefixCnt  int
	tags           map[string]string
}

// fingerprint identifies the parameters of a request for ClientToken
// idempotency: the same token with other parameters is a mismatch.
func (r eniRequest) fingerprint() string {
	return strings.Join([]string{r.subnetID, r.interfaceType, r.description, sortedJoin(r.groups),
		r.primaryIP, strings.Join(r.secondaryIPs, ","), strconv.Itoa(r.secondaryCount), strconv.Itoa(r.ipv6Count),
		strings.Join(r.ipv6, ","), strconv.Itoa(r.prefixCount), strings.Join(r.prefixes, ","), strconv.Itoa(r.ipv6PrefixCnt), tagString(r.tags)}, "|")
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
	if r.ipv6PrefixCnt, _, err = p.int("Ipv6PrefixCount"); err != nil {
		return r, err
	}
	if err := r.checkCombination(); err != nil {
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

// checkCombination refuses what EC2 refuses to combine on one ENI:
// secondary IPv4 addresses with IPv4 prefixes, IPv6 addresses with IPv6
// prefixes, and negative counts.
func (r eniRequest) checkCombination() *apiError {
	if r.secondaryCount < 0 || r.ipv6Count < 0 || r.prefixCount < 0 || r.ipv6PrefixCnt < 0 {
		return apiErr("InvalidParameterValue", "Address and prefix counts must not be negative.")
	}
	if (r.secondaryCount > 0 || len(r.secondaryIPs) > 0) && (r.prefixCount > 0 || len(r.prefixes) > 0) {
		return apiErr("InvalidParameterCombination",
			"You can't specify secondary private IPv4 addresses and IPv4 prefixes in the same request.")
	}
	if (r.ipv6Count > 0 || len(r.ipv6) > 0) && r.ipv6PrefixCnt > 0 {
		return apiErr("InvalidParameterCombination", "You can't specify IPv6 addresses and IPv6 prefixes in the same request.")
	}
	return nil
}

func createNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	req, err := parseENIRequest(p)
	if err != nil {
		return nil, err
	}
	// Ignoring the token (Options.IgnoreClientToken), the call neither
	// checks nor records it, and only echoes it.
	token := p.get("ClientToken")
	idempotent := token != "" && !env.ignoreToken
	if idempotent {
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
	if idempotent {
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
	if (req.ipv6Count > 0 || len(plan.ipv6) > 0 || req.ipv6PrefixCnt > 0) && !s.ipv6.IsValid() {
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
		if s.reservedAddr(a) {
			return nil, errReserved(a)
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
		if perr != nil || pf.Bits() != 28 || !s.cidr.Contains(pf.Addr()) || pf.Masked() != pf || reservedOverlap(s.cidr, pf) {
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
		if s.reservedAddr(a) {
			return nil, errReserved(a)
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
	if err := w.addIPv6(n, req.ipv6Count); err != nil {
		return err
	}
	return w.addIPv6Prefixes(n, req.ipv6PrefixCnt)
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
