package nodeeni

import (
	"sync"
	"time"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// view is the operator's picture of its ENIs: the latest inventory
// snapshot plus what this process changed since that snapshot was taken.
// Reconciles read it instead of calling EC2; without the local part, a
// reconcile right after a create would not see the new ENI until the next
// refresh and would create again.
type view struct {
	mu    sync.Mutex
	snap  *ec2.Snapshot
	byUID map[string][]string // NodeENI UID -> ENI IDs of snap
	local map[string]localENI
}

// localENI is an ENI as this process last left it.
type localENI struct {
	eni  ec2.ENI
	gone bool
	at   time.Time
}

func newView() *view { return &view{local: map[string]localENI{}} }

// refreshed installs a new snapshot. Local changes made before it was
// taken are in it, so they are dropped.
func (v *view) refreshed(s *ec2.Snapshot) {
	idx := map[string][]string{}
	for _, e := range s.All() {
		if uid := e.Tags[TagNodeENIUID]; uid != "" {
			idx[uid] = append(idx[uid], e.ID)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.snap, v.byUID = s, idx
	for id, l := range v.local {
		if l.at.Before(s.Taken) {
			delete(v.local, id)
		}
	}
}

// synced reports whether a first snapshot arrived.
func (v *view) synced() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.snap != nil
}

// get returns the current state of one ENI.
func (v *view) get(id string) (ec2.ENI, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.getLocked(id)
}

func (v *view) getLocked(id string) (ec2.ENI, bool) {
	if l, ok := v.local[id]; ok {
		return l.eni, !l.gone
	}
	if v.snap == nil {
		return ec2.ENI{}, false
	}
	return v.snap.ByID(id)
}

// ofNodeENI returns the ENIs tagged with a NodeENI's UID.
func (v *view) ofNodeENI(uid string) []owned {
	v.mu.Lock()
	defer v.mu.Unlock()
	seen := map[string]bool{}
	var out []owned
	add := func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		if e, ok := v.getLocked(id); ok && e.Tags[TagNodeENIUID] == uid {
			out = append(out, ownedFrom(e))
		}
	}
	for _, id := range v.byUID[uid] {
		add(id)
	}
	for id, l := range v.local {
		if l.eni.Tags[TagNodeENIUID] == uid {
			add(id)
		}
	}
	return out
}

// all returns every ENI known, local changes applied, and when the
// snapshot under them was taken.
func (v *view) all() ([]ec2.ENI, time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.snap == nil {
		return nil, time.Time{}
	}
	var out []ec2.ENI
	for _, e := range v.snap.All() {
		if l, ok := v.local[e.ID]; ok {
			if !l.gone {
				out = append(out, l.eni)
			}
			continue
		}
		out = append(out, e)
	}
	for id, l := range v.local {
		if _, inSnap := v.snap.ByID(id); !inSnap && !l.gone {
			out = append(out, l.eni)
		}
	}
	return out, v.snap.Taken
}

// put records an ENI's state as this process just saw or made it.
func (v *view) put(e ec2.ENI) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.local[e.ID] = localENI{eni: e, at: time.Now()}
}

// update changes the recorded state of an ENI in place.
func (v *view) update(id string, f func(*ec2.ENI)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.getLocked(id)
	if !ok {
		return
	}
	e = cloneENI(e)
	f(&e)
	v.local[id] = localENI{eni: e, at: time.Now()}
}

// gone records that an ENI no longer exists.
func (v *view) gone(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, _ := v.getLocked(id)
	v.local[id] = localENI{eni: e, gone: true, at: time.Now()}
}

// cloneENI copies the parts of an ENI that update may change, so the
// snapshot's copy, shared with other readers, is never written.
func cloneENI(e ec2.ENI) ec2.ENI {
	tags := make(map[string]string, len(e.Tags))
	for k, val := range e.Tags {
		tags[k] = val
	}
	e.Tags = tags
	e.SecurityGroups = append([]string(nil), e.SecurityGroups...)
	if e.Attachment != nil {
		a := *e.Attachment
		e.Attachment = &a
	}
	return e
}
