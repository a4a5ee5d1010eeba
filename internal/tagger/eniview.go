package tagger

import (
	"maps"
	"net/netip"
	"sync"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// eniView answers "which ENI holds this IP, and what tags does it carry"
// from the inventory snapshot, overlaid with what the operator learned
// since it was taken (its own writes, fresh lookups). Without the overlay
// a reconcile right after a write would see the snapshot's old tags and
// write again.
type eniView struct {
	inv *ec2.Inventory // nil when the inventory is off

	mu      sync.Mutex
	fresh   map[string]observed
	ipIndex map[netip.Addr]string
}

type observed struct {
	eni ec2.ENI
	at  time.Time
}

func newENIView(inv *ec2.Inventory) *eniView {
	return &eniView{inv: inv, fresh: map[string]observed{}, ipIndex: map[netip.Addr]string{}}
}

func (v *eniView) snapshot() *ec2.Snapshot {
	if v.inv == nil {
		return nil
	}
	return v.inv.Snapshot()
}

// byID returns the newest known state of an ENI.
func (v *eniView) byID(id string) (ec2.ENI, bool) {
	snap := v.snapshot()
	v.mu.Lock()
	o, ok := v.fresh[id]
	v.mu.Unlock()
	if snap != nil && (!ok || snap.Taken.After(o.at)) {
		if e, found := snap.ByID(id); found {
			return e, true
		}
	}
	return o.eni, ok
}

// byIP returns the newest known ENI holding ip.
func (v *eniView) byIP(ip string) (ec2.ENI, bool) {
	if a, err := netip.ParseAddr(ip); err == nil {
		v.mu.Lock()
		id, ok := v.ipIndex[a.Unmap()]
		v.mu.Unlock()
		if ok {
			if e, found := v.byID(id); found && holds(e, ip) {
				return e, true
			}
		}
	}
	if snap := v.snapshot(); snap != nil {
		if e, ok := snap.ByIP(ip); ok {
			return v.byID(e.ID)
		}
	}
	return ec2.ENI{}, false
}

// observe records an ENI as read from EC2 at time at.
func (v *eniView) observe(e ec2.ENI, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if o, ok := v.fresh[e.ID]; ok && o.at.After(at) {
		return
	}
	v.fresh[e.ID] = observed{eni: e, at: at}
	for _, ip := range append(append([]string{e.PrimaryIP}, e.SecondaryIPs...), e.IPv6Addresses...) {
		if a, err := netip.ParseAddr(ip); err == nil {
			v.ipIndex[a.Unmap()] = e.ID
		}
	}
}

// wrote records the effect of a successful CreateTags/DeleteTags.
func (v *eniView) wrote(e ec2.ENI, create, remove map[string]string) {
	tags := maps.Clone(e.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	for k, val := range remove {
		if tags[k] == val {
			delete(tags, k)
		}
	}
	maps.Copy(tags, create)
	e.Tags = tags
	v.observe(e, time.Now())
}

// prune drops what a newer snapshot supersedes.
func (v *eniView) prune(snap *ec2.Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, o := range v.fresh {
		if snap.Taken.After(o.at) {
			delete(v.fresh, id)
		}
	}
	for ip, id := range v.ipIndex {
		if _, ok := v.fresh[id]; !ok {
			delete(v.ipIndex, ip)
		}
	}
}

// holds reports whether the ENI has ip as an address or inside a prefix.
func holds(e ec2.ENI, ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, s := range append(append([]string{e.PrimaryIP}, e.SecondaryIPs...), e.IPv6Addresses...) {
		if b, err := netip.ParseAddr(s); err == nil && b == a {
			return true
		}
	}
	for _, p := range append(append([]netip.Prefix{}, e.IPv4Prefixes...), e.IPv6Prefixes...) {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// dedicated reports whether ip is the ENI's own address (a branch ENI or
// an ENI made for one pod) rather than one of many pods' secondary
// addresses or prefixes on a node's ENI.
func dedicated(e ec2.ENI, ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	if p, err := netip.ParseAddr(e.PrimaryIP); err == nil && p == a.Unmap() {
		return true
	}
	// An IPv6-only branch ENI: its single IPv6 address is the pod's.
	return e.InterfaceType == "branch" && len(e.IPv6Addresses) == 1 && e.IPv6Addresses[0] == a.String()
}
