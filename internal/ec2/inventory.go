package ec2

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Inventory is a cache of the VPC's ENIs (or those matching its filters),
// refreshed by paginated, filtered DescribeNetworkInterfaces on an interval
// and on demand. A refresh costs one call per 1,000 ENIs, whatever the
// number of pods or nodes that read it.
type Inventory struct {
	client   *Client
	filters  []Filter
	interval time.Duration
	// onRefresh, when set, is told of every completed refresh.
	onRefresh func(*Snapshot)

	refreshMu sync.Mutex // one refresh at a time
	// refreshes counts completed refreshes, so a caller of Fresh that
	// waited for one knows to use its result.
	refreshes atomic.Uint64
	mu        sync.RWMutex
	snap      *Snapshot
}

// Snapshot is the inventory's content at one refresh. It is immutable.
type Snapshot struct {
	// Taken is when the refresh that produced the snapshot started.
	Taken    time.Time
	byID     map[string]*ENI
	byIP     map[netip.Addr]*ENI
	byPrefix map[netip.Prefix]*ENI
}

// InventoryOptions configure an Inventory.
type InventoryOptions struct {
	// Filters narrow the ENIs kept (the VPC filter is always applied).
	Filters []Filter
	// Interval between refreshes when run as a Runnable (default 1m).
	Interval time.Duration
	// OnRefresh is called after each successful refresh.
	OnRefresh func(*Snapshot)
}

// NewInventory returns an empty inventory; Refresh or Start fills it.
func (c *Client) NewInventory(o InventoryOptions) *Inventory {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	return &Inventory{client: c, filters: o.Filters, interval: o.Interval, onRefresh: o.OnRefresh}
}

// Refresh reads every matching ENI and replaces the snapshot.
func (inv *Inventory) Refresh(ctx context.Context) (*Snapshot, error) {
	inv.refreshMu.Lock()
	defer inv.refreshMu.Unlock()
	return inv.refreshLocked(ctx)
}

// Fresh returns the latest snapshot when it was taken less than maxAge
// ago, and refreshes otherwise: the on-demand refresh for callers that
// missed something. Callers arriving during a refresh wait for it and
// share its result, so a burst of misses costs one refresh, and a steady
// stream of them (pods whose IP no ENI holds, retried) at most one per
// maxAge instead of one each.
func (inv *Inventory) Fresh(ctx context.Context, maxAge time.Duration) (*Snapshot, error) {
	seen := inv.refreshes.Load()
	inv.refreshMu.Lock()
	defer inv.refreshMu.Unlock()
	if s := inv.Snapshot(); s != nil && (inv.refreshes.Load() != seen || time.Since(s.Taken) < maxAge) {
		return s, nil
	}
	return inv.refreshLocked(ctx)
}

func (inv *Inventory) refreshLocked(ctx context.Context) (*Snapshot, error) {
	taken := time.Now()
	enis, err := inv.client.listENIs(ctx, inv.filters)
	if err != nil {
		return nil, err
	}
	snap := newSnapshot(taken, enis)
	inv.mu.Lock()
	inv.snap = snap
	inv.mu.Unlock()
	inv.refreshes.Add(1)
	if inv.onRefresh != nil {
		inv.onRefresh(snap)
	}
	return snap, nil
}

// Snapshot returns the latest snapshot, or nil before the first refresh.
func (inv *Inventory) Snapshot() *Snapshot {
	inv.mu.RLock()
	defer inv.mu.RUnlock()
	return inv.snap
}

// Synced reports whether a first refresh completed.
func (inv *Inventory) Synced() bool { return inv.Snapshot() != nil }

// Start refreshes at once and then every interval until ctx ends. Failed
// refreshes are retried at the next tick; the previous snapshot stays in
// use meanwhile. It fits controller-runtime's manager.Runnable.
func (inv *Inventory) Start(ctx context.Context) error {
	t := time.NewTicker(inv.interval)
	defer t.Stop()
	for {
		_, _ = inv.Refresh(ctx) // errors are counted by the client's metrics
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newSnapshot(taken time.Time, enis []ENI) *Snapshot {
	s := &Snapshot{Taken: taken, byID: make(map[string]*ENI, len(enis)),
		byIP: make(map[netip.Addr]*ENI, len(enis)), byPrefix: map[netip.Prefix]*ENI{}}
	for i := range enis {
		e := &enis[i]
		s.byID[e.ID] = e
		for _, ip := range append(append([]string{e.PrimaryIP}, e.SecondaryIPs...), e.IPv6Addresses...) {
			if a, err := netip.ParseAddr(ip); err == nil {
				s.byIP[a] = e
			}
		}
		for _, p := range append(append([]netip.Prefix{}, e.IPv4Prefixes...), e.IPv6Prefixes...) {
			s.byPrefix[p.Masked()] = e
		}
	}
	return s
}

// Len is the number of ENIs in the snapshot.
func (s *Snapshot) Len() int { return len(s.byID) }

// ByID returns the ENI with that ID.
func (s *Snapshot) ByID(id string) (ENI, bool) {
	e, ok := s.byID[id]
	if !ok {
		return ENI{}, false
	}
	return *e, true
}

// ByIP returns the ENI holding an address: primary, secondary, IPv6, or
// inside a delegated prefix (/28 IPv4, /80 IPv6).
func (s *Snapshot) ByIP(ip string) (ENI, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ENI{}, false
	}
	a = a.Unmap()
	if e, ok := s.byIP[a]; ok {
		return *e, true
	}
	bits := []int{28}
	if a.Is6() {
		bits = []int{80}
	}
	for _, b := range bits {
		if p, err := a.Prefix(b); err == nil {
			if e, ok := s.byPrefix[p]; ok {
				return *e, true
			}
		}
	}
	return ENI{}, false
}

// ByTag returns the ENIs carrying tag key with value (any value when value
// is empty).
func (s *Snapshot) ByTag(key, value string) []ENI {
	var out []ENI
	for _, e := range s.byID {
		if v, ok := e.Tags[key]; ok && (value == "" || v == value) {
			out = append(out, *e)
		}
	}
	return out
}

// All returns every ENI of the snapshot.
func (s *Snapshot) All() []ENI {
	out := make([]ENI, 0, len(s.byID))
	for _, e := range s.byID {
		out = append(out, *e)
	}
	return out
}
