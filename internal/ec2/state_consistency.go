package ec2

import (
	"maps"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// consistencyWindow is how long this process trusts its own writes over
// what EC2 describes. EC2 is eventually consistent: for a while after
// CreateTags, DeleteTags, CreateNetworkInterface or
// DeleteNetworkInterface succeeds, Describe calls may still show the ENI
// as it was ("Eventual consistency" in the EC2 API reference; it usually
// settles within seconds). A reading that does not show a write yet must
// not undo it in the state, or its consumers would see the write as
// missing and make it again (the tagger would re-tag every ENI it just
// tagged, a NodeENI would take a deleted ENI for one to adopt). The cost:
// for this long, a change someone else makes to the same tags of the
// same ENI is not seen (drift is repaired up to 10s later); the next
// reading after the window shows it. A lag longer than the window costs
// one repeated, idempotent write, whose own window then covers the rest.
const consistencyWindow = 10 * time.Second

// recentWrites are this process's writes younger than the window.
// Guarded by State.mu.
type recentWrites struct {
	tags map[string][]tagWrite
	// created and deleted map an ENI to when this process created or
	// deleted it.
	created, deleted map[string]time.Time
	// pruned is when prune last ran: noteTags prunes once a window, not
	// only a refresh, so a burst's writes are not all kept until the
	// next inventory (minutes; 10,000 writes held ~1.6 MiB).
	pruned time.Time
}

// tagWrite is one successful CreateTags (set) or DeleteTags (del: the
// tags removed where they still hold these values).
type tagWrite struct {
	at       time.Time
	set, del map[string]string
}

func newRecentWrites() recentWrites {
	return recentWrites{tags: map[string][]tagWrite{}, created: map[string]time.Time{}, deleted: map[string]time.Time{}}
}

func (r *recentWrites) noteTags(id string, w tagWrite) {
	if w.at.Sub(r.pruned) >= consistencyWindow {
		r.prune(w.at)
	}
	r.tags[id] = append(r.tags[id], w)
}

// trusted reports whether a reading taken at taken can be trusted to
// show a write made at at.
func trusted(taken, at time.Time) bool { return !taken.Before(at.Add(consistencyWindow)) }

// correct brings a reading of an ENI taken at taken up to this process's
// recent writes: tags written since are applied again, and an ENI it
// deleted is not brought back (ok false).
func (r *recentWrites) correct(e awstypes.ENI, taken time.Time) (awstypes.ENI, bool) {
	if at, ok := r.deleted[e.ID]; ok && !trusted(taken, at) {
		return e, false
	}
	writes := r.tags[e.ID]
	cloned := false
	for _, w := range writes {
		if trusted(taken, w.at) {
			continue
		}
		if !cloned {
			e.Tags, cloned = maps.Clone(e.Tags), true
			if e.Tags == nil {
				e.Tags = map[string]string{}
			}
		}
		maps.Copy(e.Tags, w.set)
		for k, v := range w.del {
			if e.Tags[k] == v {
				delete(e.Tags, k)
			}
		}
	}
	return e, true
}

// correctAll corrects a refresh's result in place, dropping ENIs this
// process deleted.
func (r *recentWrites) correctAll(list []awstypes.ENI, taken time.Time) []awstypes.ENI {
	if len(r.tags) == 0 && len(r.deleted) == 0 {
		return list
	}
	out := list[:0]
	for _, e := range list {
		if c, ok := r.correct(e, taken); ok {
			out = append(out, c)
		}
	}
	return out
}

// createdUnseen reports whether an ENI this process created may only be
// missing from a reading taken at taken because EC2 does not list it yet.
func (r *recentWrites) createdUnseen(id string, taken time.Time) bool {
	at, ok := r.created[id]
	return ok && !trusted(taken, at)
}

// prune forgets the writes every reading from now on is trusted to show,
// into new maps: a Go map keeps the room of its peak, and a burst's
// writes all become trusted within one window.
func (r *recentWrites) prune(now time.Time) {
	r.pruned = now
	tags := make(map[string][]tagWrite)
	for id, ws := range r.tags {
		i := 0
		for i < len(ws) && trusted(now, ws[i].at) {
			i++
		}
		if i < len(ws) {
			tags[id] = ws[i:]
		}
	}
	r.tags = tags
	r.created, r.deleted = untrusted(r.created, now), untrusted(r.deleted, now)
}

// untrusted returns the entries of m a reading now may not show yet.
func untrusted(m map[string]time.Time, now time.Time) map[string]time.Time {
	out := make(map[string]time.Time)
	for id, at := range m {
		if !trusted(now, at) {
			out[id] = at
		}
	}
	return out
}
