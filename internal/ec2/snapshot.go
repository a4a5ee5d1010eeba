package ec2

import (
	"net/netip"
)

// snapshot is an immutable, indexed set of ENIs: the State's picture of
// EC2 as its refreshes last read it. It keeps the indexes its readers
// use: ID, address, delegated prefix and the tag keys consumers ask for.
type snapshot struct {
	enis     []ENI
	byID     map[string]*ENI
	byIP     map[netip.Addr]*ENI
	byPrefix map[netip.Prefix]*ENI
	byTag    map[string]map[string][]*ENI // indexed tag key -> value -> ENIs
}

// newSnapshot indexes enis (which it keeps) by ID, address, delegated
// prefix and the values of the tag keys given.
func newSnapshot(enis []ENI, tagKeys []string) *snapshot {
	s := &snapshot{enis: enis, byID: make(map[string]*ENI, len(enis)), byIP: make(map[netip.Addr]*ENI, len(enis)),
		byPrefix: map[netip.Prefix]*ENI{}, byTag: map[string]map[string][]*ENI{}}
	for _, k := range tagKeys {
		s.byTag[k] = map[string][]*ENI{}
	}
	for i := range enis {
		e := &enis[i]
		s.byID[e.ID] = e
		for _, a := range e.addresses() {
			s.byIP[a] = e
		}
		for _, p := range e.prefixes() {
			s.byPrefix[p.Masked()] = e
		}
		for k, idx := range s.byTag {
			if v, ok := e.Tags[k]; ok {
				idx[v] = append(idx[v], e)
			}
		}
	}
	return s
}

// ByID returns the ENI with that ID.
func (s *snapshot) ByID(id string) (ENI, bool) {
	e, ok := s.byID[id]
	if !ok {
		return ENI{}, false
	}
	return *e, true
}

// ByIP returns the ENI holding an address: primary, secondary, IPv6, or
// inside a delegated prefix (/28 IPv4, /80 IPv6).
func (s *snapshot) ByIP(ip string) (ENI, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ENI{}, false
	}
	a = a.Unmap()
	if e, ok := s.byIP[a]; ok {
		return *e, true
	}
	bits := 28
	if a.Is6() {
		bits = 80
	}
	if p, err := a.Prefix(bits); err == nil {
		if e, ok := s.byPrefix[p]; ok {
			return *e, true
		}
	}
	return ENI{}, false
}

// ByTag returns the ENIs carrying tag key with value (any value when value
// is empty); indexed keys cost a map lookup, others a scan.
func (s *snapshot) ByTag(key, value string) []ENI {
	var out []ENI
	if idx, ok := s.byTag[key]; ok && value != "" {
		for _, e := range idx[value] {
			out = append(out, *e)
		}
		return out
	}
	for i := range s.enis {
		if v, ok := s.enis[i].Tags[key]; ok && (value == "" || v == value) {
			out = append(out, s.enis[i])
		}
	}
	return out
}

// Holds reports whether the ENI has ip as an address or inside one of its
// delegated prefixes.
func (e ENI) Holds(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, b := range e.addresses() {
		if b == a {
			return true
		}
	}
	for _, p := range e.prefixes() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// addresses are the ENI's own addresses: primary, secondary and IPv6.
func (e ENI) addresses() []netip.Addr {
	out := make([]netip.Addr, 0, 1+len(e.SecondaryIPs)+len(e.IPv6Addresses))
	for _, group := range [][]string{{e.PrimaryIP}, e.SecondaryIPs, e.IPv6Addresses} {
		for _, ip := range group {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// prefixes are the ENI's delegated prefixes, IPv4 and IPv6.
func (e ENI) prefixes() []netip.Prefix {
	return append(append([]netip.Prefix{}, e.IPv4Prefixes...), e.IPv6Prefixes...)
}

// clone copies the parts of an ENI a recorded write may change, so the
// snapshot's copy, shared with other readers, is never written.
func (e ENI) clone() ENI {
	tags := make(map[string]string, len(e.Tags))
	for k, v := range e.Tags {
		tags[k] = v
	}
	e.Tags = tags
	e.SecurityGroups = append([]string(nil), e.SecurityGroups...)
	if e.Attachment != nil {
		a := *e.Attachment
		e.Attachment = &a
	}
	return e
}

// shareTagMaps makes the ENIs of a listing whose tags are equal hold one
// map: a deployment's pods give their ENIs the same tags, and a map per
// ENI was a third of the state's bytes (100,000 ENIs: ~35 MiB). A
// snapshot's ENIs are never written (clone copies the tags before a
// change), so sharing is safe.
func shareTagMaps(enis []ENI) {
	seen := map[string]map[string]string{}
	for i := range enis {
		tags := enis[i].Tags
		if len(tags) == 0 {
			continue
		}
		key := TagSetKey(tags)
		if shared, ok := seen[key]; ok {
			enis[i].Tags = shared
		} else {
			seen[key] = tags
		}
	}
}
