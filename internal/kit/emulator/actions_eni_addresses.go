package emulator

import (
	"net/netip"
	"slices"
)

type assignPrivateIPAddressesResponse struct {
	respMeta
	NetworkInterfaceID string        `xml:"networkInterfaceId"`
	Assigned           []xPrivateIP  `xml:"assignedPrivateIpAddressesSet>item"`
	AssignedPrefixes   []xIPv4Prefix `xml:"assignedIpv4PrefixSet>item"`
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
		if s.reservedAddr(a) {
			return plan, errReserved(a)
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
		if perr != nil || pf.Bits() != 28 || pf.Masked() != pf || !s.cidr.Contains(pf.Addr()) || reservedOverlap(s.cidr, pf) ||
			!w.prefixFree(s.vpcID, pf) ||
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
