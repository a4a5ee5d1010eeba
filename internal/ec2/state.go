package ec2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// State is the process's one picture of EC2: the ENIs its consumers
// watch, indexed by ID, address, prefix and tag; the VPC's
// subnets and security groups; instance-type limits. ENIs are read by
// paginated DescribeNetworkInterfaces per Scope on the scope's schedule,
// and every successful write this process makes through the State is
// applied to it at once (state_writes.go), so a read right after a write
// sees it. Consumers learn of refreshes from Subscribe instead of being
// called back. It is safe for concurrent use; Watch, IndexTag and
// Subscribe must be called before Start.
type State struct {
	client *Client
	types  *InstanceTypes
	clock  clock.WithTicker // the client's (Config.Clock)

	scopes  []*scope // widest (fewest filters) first
	tagKeys []string // tag keys the snapshot indexes

	// refreshMu lets one ENI refresh run at a time, so callers of Fresh
	// arriving during one share it.
	refreshMu sync.Mutex

	mu sync.RWMutex
	// base is what the refreshes read; local what this process wrote or
	// looked up since (newer than base for those ENIs).
	base     *snapshot
	local    map[string]localENI
	localIPs map[netip.Addr]string
	// recent are this process's writes EC2 may not describe yet
	// (state_consistency.go).
	recent recentWrites
	// tagSets holds one map per distinct tag set written since the last
	// refresh, shared by the local changes and the recent writes: a
	// burst gives thousands of ENIs one of a few sets, and a map each
	// cost half a KiB per ENI until the next refresh. A refresh starts
	// it anew, which bounds it by the writes of one refresh interval.
	tagSets map[string]map[string]string

	catalog catalog
}

// Scope is a set of ENIs a consumer needs kept fresh: those of the VPC
// matching Filters, re-read every Interval. A refresh of a wider scope
// (whose filters are a subset of another's) counts for the narrower one.
type Scope struct {
	Name     string
	Filters  []Filter
	Interval time.Duration
}

type scope struct {
	Scope
	subs []chan struct{}

	// refreshes counts completed refreshes covering the scope.
	refreshes atomic.Uint64
	// taken (when the last refresh covering it started) and attempted
	// are guarded by State.mu.
	taken, attempted time.Time
}

// localENI is an ENI as this process last saw or left it.
type localENI struct {
	eni  awstypes.ENI
	gone bool
	at   time.Time
}

// NewState returns an empty state reading EC2 through c.
func NewState(c *Client) *State {
	var clk clock.WithTicker = clock.RealClock{}
	if c != nil {
		clk = c.clock
	}
	return &State{client: c, types: c.NewInstanceTypes(), clock: clk, local: map[string]localENI{}, localIPs: map[netip.Addr]string{},
		recent: newRecentWrites(), tagSets: map[string]map[string]string{}}
}

// Health is the EC2 health of the state's client.
func (s *State) Health() *Health { return s.client.Health() }

// Watch adds a scope. Its filters must be ones the state can also apply
// to an ENI it holds (subnet-id, vpc-id, tag:<key>, tag-key), so a
// refresh knows which ENIs it replaces.
func (s *State) Watch(sc Scope) error {
	for _, f := range sc.Filters {
		if _, ok := f.matches(awstypes.ENI{}); !ok {
			return fmt.Errorf("ec2 state: scope %q: filter %q cannot be applied locally", sc.Name, f.Name)
		}
	}
	if sc.Interval <= 0 {
		sc.Interval = time.Minute
	}
	if s.scope(sc.Name) != nil {
		return fmt.Errorf("ec2 state: scope %q watched twice", sc.Name)
	}
	s.scopes = append(s.scopes, &scope{Scope: sc})
	slices.SortStableFunc(s.scopes, func(a, b *scope) int { return len(a.Filters) - len(b.Filters) })
	return nil
}

// IndexTag makes lookups by key (ENIsTagged) a map lookup.
func (s *State) IndexTag(key string) { s.tagKeys = append(s.tagKeys, key) }

// Subscribe returns a channel that receives a signal after each refresh
// covering the scope. Signals coalesce: a consumer busy with one finds at
// most one more waiting, and the state never blocks on it.
func (s *State) Subscribe(scopeName string) (<-chan struct{}, error) {
	sc := s.scope(scopeName)
	if sc == nil {
		return nil, fmt.Errorf("ec2 state: no scope %q to subscribe to", scopeName)
	}
	ch := make(chan struct{}, 1)
	sc.subs = append(sc.subs, ch)
	return ch, nil
}

func (s *State) scope(name string) *scope {
	for _, sc := range s.scopes {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

// Start refreshes each scope at once and then on its interval until ctx
// ends; a failed refresh is tried again an interval later, the previous
// picture staying in use. It fits controller-runtime's manager.Runnable
// (leader only: only the leader calls EC2).
func (s *State) Start(ctx context.Context) error {
	for {
		due, wait := s.nextDue(s.clock.Now())
		if due != nil {
			_ = s.Refresh(ctx, due.Name) // failures are counted and logged by the client
			continue
		}
		if len(s.scopes) == 0 {
			wait = time.Hour
		}
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// nextDue returns the widest scope due now, or how long until one is.
func (s *State) nextDue(now time.Time) (*scope, time.Duration) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	wait := time.Duration(-1)
	for _, sc := range s.scopes {
		last := sc.attempted
		if sc.taken.After(last) {
			last = sc.taken
		}
		d := last.Add(sc.Interval).Sub(now)
		if last.IsZero() || d <= 0 {
			return sc, 0
		}
		if wait < 0 || d < wait {
			wait = d
		}
	}
	return nil, wait
}

// Refresh re-reads the ENIs of a scope now.
func (s *State) Refresh(ctx context.Context, scopeName string) error {
	sc := s.scope(scopeName)
	if sc == nil {
		return fmt.Errorf("ec2 state: no scope %q", scopeName)
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	return s.refreshLocked(ctx, sc)
}

// Fresh re-reads a scope unless a refresh covering it started less than
// maxAge ago: the on-demand refresh for callers that missed something.
// Callers arriving during a refresh wait for it and share its result, so
// a burst of misses costs one refresh.
func (s *State) Fresh(ctx context.Context, scopeName string, maxAge time.Duration) error {
	sc := s.scope(scopeName)
	if sc == nil {
		return fmt.Errorf("ec2 state: no scope %q", scopeName)
	}
	seen := sc.refreshes.Load()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.RLock()
	recent := !sc.taken.IsZero() && s.clock.Since(sc.taken) < maxAge
	s.mu.RUnlock()
	if recent || sc.refreshes.Load() != seen {
		return nil
	}
	return s.refreshLocked(ctx, sc)
}

func (s *State) refreshLocked(ctx context.Context, sc *scope) error {
	taken := s.clock.Now()
	enis, err := s.client.ListENIs(ctx, sc.Filters...)
	if err != nil {
		s.mu.Lock()
		sc.attempted = taken
		s.mu.Unlock()
		return err
	}
	covered := s.install(sc, enis, taken)
	for _, c := range covered {
		c.refreshes.Add(1)
		for _, ch := range c.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// install replaces the scope's ENIs with a refresh's result, drops the
// local changes the refresh has seen, and returns the scopes it covered.
func (s *State) install(sc *scope, listed []awstypes.ENI, taken time.Time) []*scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent.prune(s.clock.Now())
	clear(s.tagSets)
	listed = s.recent.correctAll(listed, taken)
	shareTagMaps(listed)
	// The listing becomes the snapshot's slice when no ENI of the old
	// one is kept (a refresh of the whole VPC); otherwise one slice of
	// the exact size: the ENIs are the biggest thing the state holds, and
	// a growing slice would copy them again and again.
	var old []awstypes.ENI
	if s.base != nil {
		old = s.base.enis
	}
	kept := 0
	for _, e := range old {
		if !sc.contains(e) {
			kept++
		}
	}
	merged := listed
	if kept > 0 {
		merged = make([]awstypes.ENI, 0, kept+len(listed))
		for _, e := range old {
			if !sc.contains(e) {
				merged = append(merged, e)
			}
		}
		merged = append(merged, listed...)
	}
	s.base = newSnapshot(merged, s.tagKeys)
	seen := make(map[string]bool, len(listed))
	for _, e := range listed {
		seen[e.ID] = true
	}
	// A new map, not deletes in place: a Go map keeps the room of its
	// peak, and a burst's local changes are superseded all at once.
	local := make(map[string]localENI)
	for id, l := range s.local {
		superseded := l.at.Before(taken) && supersedes(sc, l, seen[id], s.base.ByID) && (seen[id] || !s.recent.createdUnseen(id, taken))
		if !superseded {
			local[id] = l
		}
	}
	s.local = local
	s.reindexLocalLocked()
	var covered []*scope
	for _, other := range s.scopes {
		if sc.covers(other) {
			other.taken, other.attempted = taken, taken
			covered = append(covered, other)
		}
	}
	return covered
}

// supersedes tells whether a refresh of sc makes a local entry older
// than it obsolete: the refresh listed the ENI (seen), or the scope
// holds it (so not being listed means it is gone or left the scope), or
// it is gone and no reading brings it back. An ENI outside the scope
// that the base still holds is not superseded: the base holds it as an
// older refresh of a wider scope read it, before this process's writes
// (the NodeENI scope's refresh every resync interval reverted the pod
// ENIs the tagger had just tagged to untagged, and the next reconcile
// of such a pod wrote all its tags again).
func supersedes(sc *scope, l localENI, seen bool, inBase func(string) (awstypes.ENI, bool)) bool {
	if seen || sc.contains(l.eni) {
		return true
	}
	_, kept := inBase(l.eni.ID)
	return l.gone && !kept
}

// Synced reports whether a refresh covering the scope has completed.
func (s *State) Synced(scopeName string) bool {
	sc := s.scope(scopeName)
	return sc != nil && sc.refreshes.Load() > 0
}

// contains reports whether the scope's filters match the ENI.
func (sc *scope) contains(e awstypes.ENI) bool {
	for _, f := range sc.Filters {
		if ok, _ := f.matches(e); !ok {
			return false
		}
	}
	return true
}

// covers reports whether a refresh of sc reads every ENI of other: each of
// sc's filters is also one of other's.
func (sc *scope) covers(other *scope) bool {
	for _, f := range sc.Filters {
		if !slices.ContainsFunc(other.Filters, func(g Filter) bool {
			return g.Name == f.Name && slices.Equal(g.Values, f.Values)
		}) {
			return false
		}
	}
	return true
}

// matches applies a filter to an ENI the way EC2 would, for the filters
// scopes use (exact values, no wildcards); ok is false for others.
func (f Filter) matches(e awstypes.ENI) (match, ok bool) {
	switch {
	case f.Name == "subnet-id":
		return slices.Contains(f.Values, e.SubnetID), true
	case f.Name == "vpc-id":
		return slices.Contains(f.Values, e.VPCID), true
	case f.Name == "tag-key":
		return slices.ContainsFunc(f.Values, func(k string) bool { _, has := e.Tags[k]; return has }), true
	case len(f.Name) > 4 && f.Name[:4] == "tag:":
		v, has := e.Tags[f.Name[4:]]
		return has && slices.Contains(f.Values, v), true
	}
	return false, false
}
