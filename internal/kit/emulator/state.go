package emulator

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"
)

// world is the emulated EC2 state of one account in one region. It is not
// safe for concurrent use: the Emulator serialises access with its mutex.
type world struct {
	region    string
	accountID string
	rng       *rand.Rand
	seq       int64 // orders resources by creation for stable pagination

	instanceTypes map[string]instanceType
	vpcs          map[string]*vpc
	subnets       map[string]*subnet
	groups        map[string]*securityGroup
	instances     map[string]*instance
	enis          map[string]*eni
	// reservations are the subnets' CIDR reservations, by ID.
	reservations map[string]*cidrReservation
	// ipOwner maps a private IPv4/IPv6 address of a VPC to the ENI that
	// holds it. VPCs have separate address spaces: two VPCs with the same
	// CIDR can each hold the same address.
	ipOwner map[ipKey]*eni
	// attachments maps an attachment ID to its ENI.
	attachments map[string]*eni
	// clientTokens maps a CreateNetworkInterface ClientToken to its result.
	clientTokens map[string]tokenRecord
	macs         map[string]bool
	// detaching and terminating hold what advance must look at, so a call
	// costs nothing extra in a world of 10,000 ENIs.
	detaching   map[string]*eni
	terminating map[string]*instance
	// unseen holds the ENIs other calls cannot see yet (eventual
	// consistency, Options.VisibilityDelay) and when they can.
	unseen map[string]time.Time
	// lag holds what Describe calls show late (consistency.go).
	lag lagState
}

// ipKey is an address within one VPC.
type ipKey struct {
	vpcID string
	addr  netip.Addr
}

type tokenRecord struct {
	eniID       string
	fingerprint string
}

type resource struct {
	id   string
	seq  int64
	tags map[string]string
}

// sequence is the resource's creation order, which pagination follows.
func (r *resource) sequence() int64 { return r.seq }

func (r *resource) ident() string { return r.id }

type vpc struct {
	resource
	cidr netip.Prefix
	// secondary are the VPC's further IPv4 CIDR blocks (AWS allows up to
	// five in all), for estates larger than one /16.
	secondary []netip.Prefix
	ipv6      netip.Prefix // the Amazon-provided /56; zero when none
}

// holds reports whether one of the VPC's CIDR blocks contains pf.
func (v *vpc) holds(pf netip.Prefix) bool {
	for _, c := range append([]netip.Prefix{v.cidr}, v.secondary...) {
		if c.Contains(pf.Addr()) && pf.Bits() >= c.Bits() {
			return true
		}
	}
	return false
}

type subnet struct {
	resource
	vpcID string
	az    string
	cidr  netip.Prefix
	ipv6  netip.Prefix // zero when the subnet has no IPv6 CIDR
	// used counts the subnet's addresses held by ENIs.
	used int
	// next is where the allocator resumes scanning.
	next     netip.Addr
	nextIPv6 netip.Addr
}

type securityGroup struct {
	resource
	name        string
	vpcID       string
	description string
}

type instance struct {
	resource
	instanceType string
	subnetID     string
	vpcID        string
	az           string
	groups       []string
	state        string // pending, running, shutting-down, terminated
	launchTime   time.Time
	primaryENI   string
	imageID      string
	clientToken  string
	// fingerprint is the parameters of the RunInstances call that made
	// the instance, for ClientToken idempotency.
	fingerprint string
}

type attachment struct {
	id                  string
	instanceID          string
	deviceIndex         int
	networkCard         int
	status              string // attaching, attached, detaching
	deleteOnTermination bool
	attachTime          time.Time
	// detachDone is when a detaching ENI becomes available.
	detachDone time.Time
}

type eni struct {
	resource
	subnetID         string
	vpcID            string
	az               string
	interfaceType    string
	description      string
	mac              string
	groups           []string
	primaryIP        netip.Addr
	secondaryIPs     []netip.Addr
	ipv6             []netip.Addr
	prefixes         []netip.Prefix
	ipv6Prefixes     []netip.Prefix
	attachment       *attachment
	requesterManaged bool
	sourceDestCheck  bool
}

func (n *eni) status() string {
	if n.attachment != nil {
		return "in-use"
	}
	return "available"
}

func newWorld(region, accountID string, seed int64) *world {
	w := &world{
		region:        region,
		accountID:     accountID,
		rng:           rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15)),
		instanceTypes: defaultInstanceTypes(),
		vpcs:          map[string]*vpc{},
		subnets:       map[string]*subnet{},
		groups:        map[string]*securityGroup{},
		instances:     map[string]*instance{},
		enis:          map[string]*eni{},
		reservations:  map[string]*cidrReservation{},
		ipOwner:       map[ipKey]*eni{},
		attachments:   map[string]*eni{},
		clientTokens:  map[string]tokenRecord{},
		macs:          map[string]bool{},
		detaching:     map[string]*eni{},
		terminating:   map[string]*instance{},
		unseen:        map[string]time.Time{},
		lag:           newLagState(),
	}
	return w
}

// newID returns an AWS-shaped ID: prefix, dash, 17 hex digits.
func (w *world) newID(prefix string) string {
	for {
		id := fmt.Sprintf("%s-%017x", prefix, w.rng.Uint64()&0xfffffffffffffff)
		if !w.idTaken(id) {
			return id
		}
	}
}

// pickID returns id when it is well formed and free, or a new ID when it
// is empty.
func (w *world) pickID(prefix, id string) (string, *apiError) {
	if id == "" {
		return w.newID(prefix), nil
	}
	if err := checkID(prefix, id); err != nil {
		return "", err
	}
	if w.idTaken(id) {
		return "", apiErr("InvalidParameterValue", "ID %s is already taken", id)
	}
	return id, nil
}

func (w *world) idTaken(id string) bool {
	if _, ok := w.vpcs[id]; ok {
		return true
	}
	if _, ok := w.subnets[id]; ok {
		return true
	}
	if _, ok := w.groups[id]; ok {
		return true
	}
	if _, ok := w.instances[id]; ok {
		return true
	}
	if _, ok := w.enis[id]; ok {
		return true
	}
	_, ok := w.attachments[id]
	return ok
}

func (w *world) newResource(id string, tags map[string]string) resource {
	w.seq++
	t := make(map[string]string, len(tags))
	for k, v := range tags {
		t[k] = v
	}
	return resource{id: id, seq: w.seq, tags: t}
}

func (w *world) newMAC() string {
	for {
		b := w.rng.Uint64()
		// 02: locally administered, unicast, as AWS's are in practice (0a/02/06/0e).
		mac := fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(b), byte(b>>8), byte(b>>16), byte(b>>24), byte(b>>32))
		if !w.macs[mac] {
			w.macs[mac] = true
			return mac
		}
	}
}

// allocateIP takes the next free IPv4 address of the subnet. AWS reserves
// the first four addresses and the last one of every subnet.
func (w *world) allocateIP(s *subnet) (netip.Addr, *apiError) {
	first, last := usableRange(s.cidr)
	if !s.next.IsValid() || s.next.Less(first) || last.Less(s.next) {
		s.next = first
	}
	start := s.next
	a := start
	for {
		if _, used := w.owner(s.vpcID, a); !used && !w.inReservation(s, a) {
			s.next = a.Next()
			return a, nil
		}
		a = a.Next()
		if last.Less(a) {
			a = first
		}
		if a == start {
			return netip.Addr{}, apiErr("InsufficientFreeAddressesInSubnet",
				"The specified subnet %s does not have enough free addresses to satisfy the request.", s.id)
		}
	}
}

// allocateIPv6 takes the next free IPv6 address of the subnet's IPv6 CIDR.
func (w *world) allocateIPv6(s *subnet) (netip.Addr, *apiError) {
	if !s.ipv6.IsValid() {
		return netip.Addr{}, apiErr("InvalidParameterValue",
			"Subnet %s does not have an IPv6 CIDR block; associate one before requesting IPv6 addresses.", s.id)
	}
	a := s.nextIPv6
	if !a.IsValid() || !s.ipv6.Contains(a) {
		a = s.ipv6.Addr().Next().Next().Next().Next()
	}
	for ; s.ipv6.Contains(a); a = a.Next() {
		if _, used := w.owner(s.vpcID, a); !used && !s.reservedAddr(a) && !w.inReservation(s, a) {
			s.nextIPv6 = a.Next()
			return a, nil
		}
	}
	return netip.Addr{}, apiErr("InsufficientFreeAddressesInSubnet",
		"The specified subnet %s does not have enough free IPv6 addresses.", s.id)
}

// allocatePrefix takes a free, aligned /28 of the subnet for prefix
// delegation, as AWS does for Ipv4PrefixCount.
func (w *world) allocatePrefix(s *subnet) (netip.Prefix, *apiError) {
	first, last := usableRange(s.cidr)
	base := s.cidr.Masked().Addr()
	for off := uint32(0); ; off += 16 {
		start := addOffset(base, off)
		if !s.cidr.Contains(start) {
			break
		}
		p := netip.PrefixFrom(start, 28)
		if p.Addr().Less(first) || last.Less(addOffset(start, 15)) {
			continue
		}
		if w.prefixFree(s.vpcID, p) && !w.overlapsExplicitReservation(s, p) {
			return p, nil
		}
	}
	return netip.Prefix{}, apiErr("InsufficientCidrBlocks",
		"There are not enough free cidr blocks in the specified subnet %s to satisfy the request.", s.id)
}

// owner returns the ENI that holds an address of a VPC.
func (w *world) owner(vpcID string, a netip.Addr) (*eni, bool) {
	n, ok := w.ipOwner[ipKey{vpcID, a}]
	return n, ok
}

// prefixFree reports whether no address of p is held in the VPC.
func (w *world) prefixFree(vpcID string, p netip.Prefix) bool {
	for _, a := range prefixAddrs(p) {
		if _, used := w.owner(vpcID, a); used {
			return false
		}
	}
	return true
}

// claim records that n holds an address of its VPC; the address must be free.
func (w *world) claim(n *eni, a netip.Addr) {
	w.ipOwner[ipKey{n.vpcID, a}] = n
	if a.Is4() {
		w.subnets[n.subnetID].used++
	}
}

// release frees an address held by n.
func (w *world) release(n *eni, a netip.Addr) {
	k := ipKey{n.vpcID, a}
	if w.ipOwner[k] != n {
		return
	}
	delete(w.ipOwner, k)
	if s, ok := w.subnets[n.subnetID]; ok && a.Is4() {
		s.used--
	}
}

func prefixAddrs(p netip.Prefix) []netip.Addr {
	out := make([]netip.Addr, 0, 1<<(32-p.Bits()))
	for a := p.Addr(); p.Contains(a); a = a.Next() {
		out = append(out, a)
	}
	return out
}

func usableRange(p netip.Prefix) (first, last netip.Addr) {
	base := p.Masked().Addr()
	size := uint32(1) << (32 - p.Bits())
	return addOffset(base, 4), addOffset(base, size-2)
}

func addOffset(a netip.Addr, off uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += off
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// advance applies the state changes that AWS makes asynchronously and whose
// time has come: detaching ENIs become available, terminating instances
// become terminated.
func (w *world) advance(now time.Time) {
	for id, n := range w.detaching {
		a := n.attachment
		if a == nil || a.status != "detaching" {
			delete(w.detaching, id)
			continue
		}
		if !now.Before(a.detachDone) {
			delete(w.attachments, a.id)
			n.attachment = nil
			delete(w.detaching, id)
		}
	}
	for id, i := range w.terminating {
		i.state = "terminated"
		delete(w.terminating, id)
	}
	for id, at := range w.unseen {
		if !now.Before(at) {
			delete(w.unseen, id)
		}
	}
	w.advanceLags(now)
}

// visible tells whether calls can see an ENI yet.
func (w *world) visible(id string) bool {
	_, hidden := w.unseen[id]
	return !hidden
}

// deleteENI removes an ENI and frees its addresses.
func (w *world) deleteENI(n *eni) {
	for _, a := range n.addresses() {
		w.release(n, a)
	}
	if n.attachment != nil {
		delete(w.attachments, n.attachment.id)
	}
	delete(w.macs, n.mac)
	delete(w.detaching, n.id)
	delete(w.unseen, n.id)
	delete(w.enis, n.id)
}

// addresses lists every address the ENI holds, prefixes expanded.
func (n *eni) addresses() []netip.Addr {
	out := append([]netip.Addr{n.primaryIP}, n.secondaryIPs...)
	out = append(out, n.ipv6...)
	for _, p := range n.prefixes {
		out = append(out, prefixAddrs(p)...)
	}
	// An IPv6 prefix (/80) is too large to hold address by address; its
	// network address stands for it (ipv6PrefixFree checks overlaps).
	for _, p := range n.ipv6Prefixes {
		out = append(out, p.Addr())
	}
	return out
}

// sortedENIs returns ENIs in creation order, the order pagination uses.
func (w *world) sortedENIs() []*eni {
	out := make([]*eni, 0, len(w.enis))
	for _, n := range w.enis {
		if w.visible(n.id) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *eni) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// attachedTo lists the ENIs attached to an instance, by device index.
func (w *world) attachedTo(instanceID string) []*eni {
	var out []*eni
	for _, n := range w.enis {
		if n.attachment != nil && n.attachment.instanceID == instanceID {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *eni) int { return cmp.Compare(a.attachment.deviceIndex, b.attachment.deviceIndex) })
	return out
}

// taggable finds any resource that carries tags.
func (w *world) taggable(id string) (*resource, string, bool) {
	if n, ok := w.enis[id]; ok && w.visible(id) {
		return &n.resource, "network-interface", true
	}
	if i, ok := w.instances[id]; ok {
		return &i.resource, "instance", true
	}
	if s, ok := w.subnets[id]; ok {
		return &s.resource, "subnet", true
	}
	if v, ok := w.vpcs[id]; ok {
		return &v.resource, "vpc", true
	}
	if g, ok := w.groups[id]; ok {
		return &g.resource, "security-group", true
	}
	return nil, "", false
}
