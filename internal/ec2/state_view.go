package ec2

import (
	"maps"
	"net/netip"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// ENI returns the newest known state of an ENI.
func (s *State) ENI(id string) (awstypes.ENI, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.eniLocked(id)
}

func (s *State) eniLocked(id string) (awstypes.ENI, bool) {
	if l, ok := s.local[id]; ok {
		return l.eni, !l.gone
	}
	if s.base == nil {
		return awstypes.ENI{}, false
	}
	return s.base.ByID(id)
}

// ENIByIP returns the newest known ENI holding ip (as an address or
// inside a delegated prefix).
func (s *State) ENIByIP(ip string) (awstypes.ENI, bool) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return awstypes.ENI{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if id, ok := s.localIPs[a.Unmap()]; ok {
		if e, found := s.eniLocked(id); found && e.Holds(ip) {
			return e, true
		}
	}
	if s.base == nil {
		return awstypes.ENI{}, false
	}
	if b, ok := s.base.ByIP(ip); ok {
		if e, found := s.eniLocked(b.ID); found && e.Holds(ip) {
			return e, true
		}
	}
	return awstypes.ENI{}, false
}

// ENIsTagged returns the known ENIs carrying tag key with value.
func (s *State) ENIsTagged(key, value string) []awstypes.ENI {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var base []awstypes.ENI
	if s.base != nil {
		base = s.base.ByTag(key, value)
	}
	return s.overlayLocked(base, func(e awstypes.ENI) bool { v, ok := e.Tags[key]; return ok && (value == "" || v == value) })
}

// ENIsIn returns the known ENIs of a scope and when the last refresh
// covering it started (zero before the first).
func (s *State) ENIsIn(scopeName string) ([]awstypes.ENI, time.Time) {
	sc := s.scope(scopeName)
	if sc == nil {
		return nil, time.Time{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var base []awstypes.ENI
	if s.base != nil {
		for _, e := range s.base.enis {
			if sc.contains(e) {
				base = append(base, e)
			}
		}
	}
	return s.overlayLocked(base, sc.contains), sc.taken
}

// overlayLocked applies the local changes to ENIs read from the base and
// adds the local ENIs that match but the base does not hold.
func (s *State) overlayLocked(base []awstypes.ENI, match func(awstypes.ENI) bool) []awstypes.ENI {
	out := make([]awstypes.ENI, 0, len(base))
	seen := make(map[string]bool, len(base))
	for _, e := range base {
		seen[e.ID] = true
		if l, ok := s.local[e.ID]; ok {
			if !l.gone && match(l.eni) {
				out = append(out, l.eni)
			}
			continue
		}
		out = append(out, e)
	}
	for id, l := range s.local {
		if !seen[id] && !l.gone && match(l.eni) {
			out = append(out, l.eni)
		}
	}
	return out
}

// Observe records an ENI as read from EC2 at time at; an older reading
// than the one held is ignored.
func (s *State) Observe(e awstypes.ENI, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.local[e.ID]; ok && l.at.After(at) {
		return
	}
	e, ok := s.recent.correct(e, at)
	if !ok {
		return
	}
	s.putLocked(localENI{eni: e, at: at})
}

// Forget records that an ENI no longer exists.
func (s *State) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, _ := s.eniLocked(id)
	e.ID = id
	s.putLocked(localENI{eni: e, gone: true, at: s.clock.Now()})
}

// update changes the recorded state of a known ENI.
func (s *State) update(id string, change func(*awstypes.ENI)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.eniLocked(id)
	if !ok {
		return
	}
	e = e.Clone()
	change(&e)
	e.Tags = s.shareTagsLocked(e.Tags)
	s.putLocked(localENI{eni: e, at: s.clock.Now()})
}

// shareTagsLocked returns the state's map equal to tags (see tagSets),
// a copy of tags the first time. Nothing writes to a shared map: a
// change to an ENI's tags clones them first (update, correct).
func (s *State) shareTagsLocked(tags map[string]string) map[string]string {
	if len(tags) == 0 {
		return nil
	}
	key := TagSetKey(tags)
	shared, ok := s.tagSets[key]
	if !ok {
		shared = maps.Clone(tags)
		s.tagSets[key] = shared
	}
	return shared
}

func (s *State) putLocked(l localENI) {
	s.local[l.eni.ID] = l
	if l.gone {
		return
	}
	for _, a := range l.eni.Addresses() {
		s.localIPs[a] = l.eni.ID
	}
}

// reindexLocalLocked rebuilds the address index of the local changes.
func (s *State) reindexLocalLocked() {
	s.localIPs = make(map[netip.Addr]string, len(s.local))
	for _, l := range s.local {
		if !l.gone {
			for _, a := range l.eni.Addresses() {
				s.localIPs[a] = l.eni.ID
			}
		}
	}
}
