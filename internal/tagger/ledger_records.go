package tagger

import (
	"maps"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// recordIndex holds the ledger's records in memory, found by pod UID, by
// pod name and by ENI. The Ledger's lock guards it.
type recordIndex struct {
	byUID map[string]Record
	byPod map[string]string // namespace/name -> UID
	// byENI lists the UIDs of the pods on each ENI: one in most cases (a
	// slice, not a set: a map per ENI cost ~200 bytes a record).
	byENI map[string][]string
	// tagSets holds one copy of each distinct tag set the records carry,
	// shared by every record with it (a deployment's pods have one):
	// records are never changed in place, only replaced.
	tagSets map[string]*sharedTags
}

type sharedTags struct {
	tags map[string]string
	refs int
}

func newRecordIndex() recordIndex {
	return recordIndex{byUID: map[string]Record{}, byPod: map[string]string{}, byENI: map[string][]string{}, tagSets: map[string]*sharedTags{}}
}

func (x *recordIndex) ofPod(pod string) (Record, bool) {
	r, ok := x.byUID[x.byPod[pod]]
	return r, ok
}

func (x *recordIndex) onENI(eni string) []Record {
	out := make([]Record, 0, len(x.byENI[eni]))
	for _, uid := range x.byENI[eni] {
		out = append(out, x.byUID[uid])
	}
	return out
}

// add stores r, replacing the record of its UID.
func (x *recordIndex) add(r Record) {
	// ENI IDs and hashes recur (the EC2 state and pods of one tag set
	// hold the same): one copy each.
	r.ENI, r.Hash = podcache.Intern(r.ENI), podcache.Intern(r.Hash)
	r.Tags = x.shareTags(r.Tags)
	if old, ok := x.byUID[r.UID]; ok {
		x.unindexENI(old)
	}
	x.byUID[r.UID] = r
	x.byPod[r.Pod] = r.UID
	if !slices.Contains(x.byENI[r.ENI], r.UID) {
		x.byENI[r.ENI] = append(x.byENI[r.ENI], r.UID)
	}
}

// remove drops the record of uid and tells whether there was one.
func (x *recordIndex) remove(uid string) bool {
	r, ok := x.byUID[uid]
	if !ok {
		return false
	}
	delete(x.byUID, uid)
	if x.byPod[r.Pod] == uid {
		delete(x.byPod, r.Pod)
	}
	x.unindexENI(r)
	return true
}

// unindexENI drops a replaced or removed record from byENI and gives
// back its tag set.
func (x *recordIndex) unindexENI(r Record) {
	x.releaseTags(r.Tags)
	if uids := slices.DeleteFunc(x.byENI[r.ENI], func(u string) bool { return u == r.UID }); len(uids) > 0 {
		x.byENI[r.ENI] = uids
	} else {
		delete(x.byENI, r.ENI)
	}
}

// shareTags returns the index's copy of a tag set equal to tags, taking
// one reference; releaseTags gives it back.
func (x *recordIndex) shareTags(tags map[string]string) map[string]string {
	if len(tags) == 0 {
		return tags
	}
	key := ec2.TagSetKey(tags)
	s, ok := x.tagSets[key]
	if !ok {
		s = &sharedTags{tags: maps.Clone(tags)}
		x.tagSets[key] = s
	}
	s.refs++
	return s.tags
}

func (x *recordIndex) releaseTags(tags map[string]string) {
	if len(tags) == 0 {
		return
	}
	key := ec2.TagSetKey(tags)
	if s, ok := x.tagSets[key]; ok {
		if s.refs--; s.refs <= 0 {
			delete(x.tagSets, key)
		}
	}
}

// all returns every record, ordered by pod.
func (x *recordIndex) all() []Record {
	out := slices.Collect(maps.Values(x.byUID))
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}
