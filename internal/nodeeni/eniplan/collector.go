package eniplan

import (
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Sighting is what the collector remembers of an orphan candidate.
type Sighting struct {
	first time.Time
	times int
	last  time.Time // the snapshot it was last seen in
}

// Snapshot is one inventory refresh's ENIs (those that pass the trust
// check) and when it was taken.
type Snapshot struct {
	ENIs  []awstypes.ENI
	Taken time.Time
}

// Orphans updates the sightings with one snapshot and returns the ENIs to
// delete now; live holds the UIDs of the NodeENIs that exist. It is pure
// but for the sightings map it maintains.
func Orphans(snap Snapshot, live map[string]bool, seen map[string]*Sighting, now time.Time, grace time.Duration) []awstypes.ENI {
	var out []awstypes.ENI
	current := map[string]bool{}
	for _, e := range snap.ENIs {
		if live[e.Tags[TagNodeENIUID]] || e.Attachment != nil || e.Status != "available" {
			continue
		}
		current[e.ID] = true
		s, ok := seen[e.ID]
		if !ok {
			s = &Sighting{first: now}
			seen[e.ID] = s
		}
		if !s.last.Equal(snap.Taken) {
			s.times++
			s.last = snap.Taken
		}
		born := s.first
		if t := OwnedFrom(e).CreatedAt; !t.IsZero() && t.Before(born) {
			born = t
		}
		if s.times >= 2 && now.Sub(born) >= grace && now.Sub(s.first) > 0 {
			out = append(out, e)
		}
	}
	for id := range seen {
		if !current[id] {
			delete(seen, id) // adopted, attached or gone: start over if it comes back
		}
	}
	return out
}
