package emulator

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// IPv6 addresses and /80 prefixes of ENIs: CreateNetworkInterface's
// Ipv6AddressCount and Ipv6PrefixCount, AssignIpv6Addresses and
// UnassignIpv6Addresses.

type assignIPv6AddressesResponse struct {
	respMeta
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	Assigned           []string `xml:"assignedIpv6Addresses>item"`
	AssignedPrefixes   []string `xml:"assignedIpv6PrefixSet>item"`
}

type unassignIPv6AddressesResponse struct {
	respMeta
	NetworkInterfaceID string   `xml:"networkInterfaceId"`
	Unassigned         []string `xml:"unassignedIpv6Addresses>item"`
	UnassignedPrefixes []string `xml:"unassignedIpv6PrefixSet>item"`
}

type xIPv6Prefix struct {
	IPv6Prefix string `xml:"ipv6Prefix"`
}

// ipv6Request is the parsed shape of AssignIpv6Addresses.
type ipv6Request struct {
	count, prefixCount int
	addrs              []netip.Addr
	prefixes           []netip.Prefix
}

// assignIPv6Addresses adds IPv6 addresses (counted or named) or /80
// prefixes to an ENI, within the subnet's IPv6 CIDR and the instance
// type's IPv6 addresses per interface. It changes nothing unless it
// succeeds.
func assignIPv6Addresses(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	req, err := w.parseIPv6Request(n, p)
	if err != nil {
		return nil, err
	}
	mark, markPrefixes := len(n.ipv6), len(n.ipv6Prefixes)
	for _, a := range req.addrs {
		n.ipv6 = append(n.ipv6, a)
		w.claim(n, a)
	}
	for _, pf := range req.prefixes {
		n.ipv6Prefixes = append(n.ipv6Prefixes, pf)
		w.claim(n, pf.Addr())
	}
	err = w.addIPv6(n, req.count)
	if err == nil {
		err = w.addIPv6Prefixes(n, req.prefixCount)
	}
	if err != nil {
		w.undoIPv6(n, mark, markPrefixes)
		return nil, err
	}
	resp := &assignIPv6AddressesResponse{NetworkInterfaceID: n.id}
	for _, a := range n.ipv6[mark:] {
		resp.Assigned = append(resp.Assigned, a.String())
	}
	for _, pf := range n.ipv6Prefixes[markPrefixes:] {
		resp.AssignedPrefixes = append(resp.AssignedPrefixes, pf.String())
	}
	return resp, nil
}

func (w *world) parseIPv6Request(n *eni, p params) (ipv6Request, *apiError) {
	var req ipv6Request
	var err *apiError
	if req.count, _, err = p.int("Ipv6AddressCount"); err != nil {
		return req, err
	}
	if req.prefixCount, _, err = p.int("Ipv6PrefixCount"); err != nil {
		return req, err
	}
	s := w.subnets[n.subnetID]
	if !s.ipv6.IsValid() {
		return req, apiErr("InvalidParameterValue", "Subnet %s does not have an IPv6 CIDR block.", s.id)
	}
	if req.addrs, err = w.checkExplicitIPv6(s, p.list("Ipv6Addresses")); err != nil {
		return req, err
	}
	for _, ps := range p.list("Ipv6Prefix") {
		pf, perr := netip.ParsePrefix(ps)
		if perr != nil || pf.Bits() != 80 || pf.Masked() != pf || !s.ipv6.Contains(pf.Addr()) || reservedOverlap(s.ipv6, pf) ||
			!w.ipv6PrefixFree(s, pf) {
			return req, apiErr("InvalidParameterValue", "Prefix %s is not a free /80 inside subnet %s", ps, s.id)
		}
		req.prefixes = append(req.prefixes, pf)
	}
	return req, w.checkIPv6Request(n, req)
}

// checkIPv6Request refuses an empty or negative request, addresses with
// prefixes, and one over the instance type's IPv6 addresses per
// interface.
func (w *world) checkIPv6Request(n *eni, req ipv6Request) *apiError {
	addrs, prefixes := req.count+len(req.addrs), req.prefixCount+len(req.prefixes)
	switch {
	case req.count < 0 || req.prefixCount < 0:
		return apiErr("InvalidParameterValue", "Ipv6AddressCount and Ipv6PrefixCount must not be negative.")
	case addrs == 0 && prefixes == 0:
		return apiErr("MissingParameter", "Specify IPv6 addresses, a count, or prefixes to assign.")
	case addrs > 0 && prefixes > 0:
		return apiErr("InvalidParameterCombination", "You can't specify IPv6 addresses and IPv6 prefixes in the same request.")
	}
	if limit := w.ipv6Limit(n); limit > 0 && len(n.ipv6)+len(n.ipv6Prefixes)+addrs+prefixes > limit {
		return apiErr("Ipv6AddressLimitExceeded", "Number of IPv6 addresses on interface %s will exceed limit.", n.id)
	}
	return nil
}

// ipv6Limit is the IPv6 addresses per interface of the instance type
// the ENI is attached to, or 0 when it is not attached.
func (w *world) ipv6Limit(n *eni) int {
	if n.attachment == nil {
		return 0
	}
	if inst, ok := w.instances[n.attachment.instanceID]; ok {
		return w.instanceTypes[inst.instanceType].ipv6PerInterface
	}
	return 0
}

// undoIPv6 puts an ENI's IPv6 addresses and prefixes back to marks.
func (w *world) undoIPv6(n *eni, mark, markPrefixes int) {
	for _, a := range n.ipv6[mark:] {
		w.release(n, a)
	}
	n.ipv6 = n.ipv6[:mark]
	for _, pf := range n.ipv6Prefixes[markPrefixes:] {
		w.release(n, pf.Addr())
	}
	n.ipv6Prefixes = n.ipv6Prefixes[:markPrefixes]
}

func unassignIPv6Addresses(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	resp := &unassignIPv6AddressesResponse{NetworkInterfaceID: n.id}
	var drop []netip.Addr
	for _, ip := range p.list("Ipv6Addresses") {
		a, perr := netip.ParseAddr(ip)
		if perr != nil || !slices.Contains(n.ipv6, a) {
			return nil, apiErr("InvalidParameterValue", "Some of the specified addresses are not assigned to interface %s", n.id)
		}
		drop = append(drop, a)
	}
	var dropPrefixes []netip.Prefix
	for _, ps := range p.list("Ipv6Prefix") {
		pf, perr := netip.ParsePrefix(ps)
		if perr != nil || !slices.Contains(n.ipv6Prefixes, pf) {
			return nil, apiErr("InvalidParameterValue", "Prefix %s is not assigned to interface %s", ps, n.id)
		}
		dropPrefixes = append(dropPrefixes, pf)
	}
	if len(drop) == 0 && len(dropPrefixes) == 0 {
		return nil, apiErr("MissingParameter", "Specify IPv6 addresses or prefixes to unassign.")
	}
	for _, a := range drop {
		w.release(n, a)
		resp.Unassigned = append(resp.Unassigned, a.String())
	}
	n.ipv6 = slices.DeleteFunc(n.ipv6, func(a netip.Addr) bool { return slices.Contains(drop, a) })
	for _, pf := range dropPrefixes {
		w.release(n, pf.Addr())
		resp.UnassignedPrefixes = append(resp.UnassignedPrefixes, pf.String())
	}
	n.ipv6Prefixes = slices.DeleteFunc(n.ipv6Prefixes, func(pf netip.Prefix) bool { return slices.Contains(dropPrefixes, pf) })
	return resp, nil
}

// addIPv6 allocates count IPv6 addresses of the ENI's subnet.
func (w *world) addIPv6(n *eni, count int) *apiError {
	s := w.subnets[n.subnetID]
	for range count {
		a, err := w.allocateIPv6(s)
		if err != nil {
			return err
		}
		n.ipv6 = append(n.ipv6, a)
		w.claim(n, a)
	}
	return nil
}

// addIPv6Prefixes delegates count /80 prefixes of the ENI's subnet.
// They are taken from the top of the /64 down, away from the single
// addresses, which are taken from its bottom up.
func (w *world) addIPv6Prefixes(n *eni, count int) *apiError {
	s := w.subnets[n.subnetID]
	for range count {
		pf, ok := w.allocateIPv6Prefix(s)
		if !ok {
			return apiErr("InsufficientCidrBlocks",
				"There are not enough free cidr blocks in the specified subnet %s to satisfy the request.", s.id)
		}
		n.ipv6Prefixes = append(n.ipv6Prefixes, pf)
		w.claim(n, pf.Addr())
	}
	return nil
}

func (w *world) allocateIPv6Prefix(s *subnet) (netip.Prefix, bool) {
	if !s.ipv6.IsValid() || s.ipv6.Bits() > 80 {
		return netip.Prefix{}, false
	}
	base := s.ipv6.Masked().Addr().As16()
	count := uint64(1) << (80 - s.ipv6.Bits())
	for k := count - 1; k > 0; k-- {
		b := base
		// The /80's index sits in bits 64-79: bytes 8 and 9.
		binary.BigEndian.PutUint16(b[8:10], binary.BigEndian.Uint16(base[8:10])+uint16(k))
		pf := netip.PrefixFrom(netip.AddrFrom16(b), 80)
		if !reservedOverlap(s.ipv6, pf) && w.ipv6PrefixFree(s, pf) {
			return pf, true
		}
	}
	return netip.Prefix{}, false
}

// ipv6PrefixFree reports whether no ENI of the subnet's VPC holds pf,
// an address inside it or a prefix overlapping it.
func (w *world) ipv6PrefixFree(s *subnet, pf netip.Prefix) bool {
	for _, n := range w.enis {
		if n.vpcID != s.vpcID {
			continue
		}
		for _, q := range n.ipv6Prefixes {
			if q.Overlaps(pf) {
				return false
			}
		}
		for _, a := range n.ipv6 {
			if pf.Contains(a) {
				return false
			}
		}
	}
	return true
}

func xIPv6Prefixes(n *eni) []xIPv6Prefix {
	return xList(n.ipv6Prefixes, func(p netip.Prefix) xIPv6Prefix { return xIPv6Prefix{IPv6Prefix: p.String()} })
}
