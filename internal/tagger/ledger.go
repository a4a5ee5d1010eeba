package tagger

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// Record is what the operator applied to an ENI on behalf of one pod. It
// is kept in the ledger, which outlives the pod, so tags are removed even
// when the pod disappeared while the operator was down.
type Record struct {
	Pod  string            `json:"pod"` // namespace/name
	UID  string            `json:"uid"`
	ENI  string            `json:"eni"`
	Tags map[string]string `json:"tags,omitempty"`
	Hash string            `json:"hash,omitempty"`
}

func (r Record) equal(o Record) bool {
	return r.Pod == o.Pod && r.UID == o.UID && r.ENI == o.ENI && r.Hash == o.Hash && maps.Equal(r.Tags, o.Tags)
}

// LedgerOptions configure a Ledger.
type LedgerOptions struct {
	// Namespace and Name locate the ConfigMaps: Name-00 … Name-NN.
	Namespace, Name string
	// Shards is the number of ConfigMaps records may be spread over, so
	// the ledger scales past one object's size.
	Shards int
	// MaxShardBytes bounds one ConfigMap's data; records no shard has
	// room for stay in memory only and are reported.
	MaxShardBytes int
	// BatchInterval and BatchSize decide when changes are written: once
	// they have stopped for BatchInterval (at the latest maxWaitIntervals
	// intervals after the first change not written), or at once when
	// BatchSize changes wait for each shard to be written.
	BatchInterval time.Duration
	BatchSize     int
	// FieldOwner is the server-side apply field manager.
	FieldOwner string
	// MemoryOnly keeps records in memory and never touches ConfigMaps
	// (--enable-cache-configmap=false).
	MemoryOnly bool
	// OnFlush, when set, is told of every ConfigMap write (for metrics):
	// overflow, with the first write of a flush, is how many records no
	// shard had room for.
	OnFlush func(shard, records, bytes, overflow int)
	// Clock times the batches and the load's retries (nil: the real
	// clock).
	Clock clock.WithTicker
}

// Ledger is the operator's record of what it applied, persisted to
// ConfigMaps in its own namespace. Memory is authoritative (only the
// leader writes) and each write replaces a shard's whole content, so a
// deleted record never comes back from a stale write. A record stays in
// the shard it was first written to and a new one goes to the first shard
// with room, so a burst fills one ConfigMap after the other; every version
// reads every shard, so the layout needs no migration either way.
type Ledger struct {
	c      client.Client
	o      LedgerOptions
	loaded chan struct{}
	kick   chan struct{}
	// flushing serialises Flush: two writes of one shard built at
	// different times could otherwise land in the wrong order.
	flushing sync.Mutex

	mu    sync.Mutex
	byUID map[string]Record
	byPod map[string]string // namespace/name -> UID
	// byENI lists the UIDs of the pods on each ENI: one in most cases (a
	// slice, not a set: a map per ENI cost ~200 bytes a record).
	byENI map[string][]string
	// tagSets holds one copy of each distinct tag set the records carry,
	// shared by every record with it (a deployment's pods have one):
	// records are never changed in place, only replaced.
	tagSets map[string]*sharedTags
	// shards[i] holds the records of ConfigMap i (UID -> bytes), and
	// unplaced those no shard had room for; where maps a UID to its shard.
	shards   []map[string]int
	size     []int
	unplaced map[string]int
	where    map[string]int
	dirty    map[int]bool
	changed  int
	// first and last are when the oldest and newest change not yet
	// written were made.
	first, last time.Time
}

// NewLedger returns an empty ledger; Start loads and persists it.
func NewLedger(c client.Client, o LedgerOptions) *Ledger {
	if o.Shards <= 0 {
		o.Shards = 16
	}
	if o.MaxShardBytes <= 0 {
		o.MaxShardBytes = 900 * 1024 // the API server refuses objects over 1 MiB
	}
	if o.BatchInterval <= 0 {
		o.BatchInterval = 2 * time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 200
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.FieldOwner == "" {
		o.FieldOwner = "eni-operator"
	}
	l := &Ledger{c: c, o: o, loaded: make(chan struct{}), kick: make(chan struct{}, 1),
		byUID: map[string]Record{}, byPod: map[string]string{}, byENI: map[string][]string{}, tagSets: map[string]*sharedTags{},
		shards: make([]map[string]int, o.Shards), size: make([]int, o.Shards), unplaced: map[string]int{},
		where: map[string]int{}, dirty: map[int]bool{}}
	for i := range l.shards {
		l.shards[i] = map[string]int{}
	}
	return l
}

// Get returns the record of a pod (namespace/name).
func (l *Ledger) Get(pod string) (Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.byUID[l.byPod[pod]]
	return r, ok
}

// Put stores a record, replacing the pod's previous one.
func (l *Ledger) Put(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefer := -1
	if old, ok := l.byPod[r.Pod]; ok {
		if l.byUID[old].equal(r) {
			return // nothing changed: a restart in sync writes no ConfigMap
		}
		if old == r.UID {
			prefer = l.where[old]
		}
		l.removeLocked(old)
	}
	l.indexLocked(r)
	l.placeLocked(r.UID, entryBytes(r), prefer)
}

// Delete forgets a pod's record.
func (l *Ledger) Delete(pod string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.byPod[pod]; ok {
		l.removeLocked(uid)
	}
}

// OnENI returns the records of the pods on one ENI.
func (l *Ledger) OnENI(eni string) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.byENI[eni]))
	for _, uid := range l.byENI[eni] {
		out = append(out, l.byUID[uid])
	}
	return out
}

func (l *Ledger) indexLocked(r Record) {
	// ENI IDs and hashes recur (the EC2 state and pods of one tag set
	// hold the same): one copy each.
	r.ENI, r.Hash = podcache.Intern(r.ENI), podcache.Intern(r.Hash)
	r.Tags = l.shareTagsLocked(r.Tags)
	if old, ok := l.byUID[r.UID]; ok {
		l.unindexENILocked(old)
	}
	l.byUID[r.UID] = r
	l.byPod[r.Pod] = r.UID
	if !slices.Contains(l.byENI[r.ENI], r.UID) {
		l.byENI[r.ENI] = append(l.byENI[r.ENI], r.UID)
	}
}

// unindexENILocked drops a replaced or removed record from byENI and
// gives back its tag set.
func (l *Ledger) unindexENILocked(r Record) {
	l.releaseTagsLocked(r.Tags)
	if uids := slices.DeleteFunc(l.byENI[r.ENI], func(u string) bool { return u == r.UID }); len(uids) > 0 {
		l.byENI[r.ENI] = uids
	} else {
		delete(l.byENI, r.ENI)
	}
}

type sharedTags struct {
	tags map[string]string
	refs int
}

// shareTagsLocked returns the ledger's copy of a tag set equal to tags,
// taking one reference; releaseTagsLocked gives it back.
func (l *Ledger) shareTagsLocked(tags map[string]string) map[string]string {
	if len(tags) == 0 {
		return tags
	}
	key := ec2.TagSetKey(tags)
	s, ok := l.tagSets[key]
	if !ok {
		s = &sharedTags{tags: maps.Clone(tags)}
		l.tagSets[key] = s
	}
	s.refs++
	return s.tags
}

func (l *Ledger) releaseTagsLocked(tags map[string]string) {
	if len(tags) == 0 {
		return
	}
	key := ec2.TagSetKey(tags)
	if s, ok := l.tagSets[key]; ok {
		if s.refs--; s.refs <= 0 {
			delete(l.tagSets, key)
		}
	}
}

func (l *Ledger) removeLocked(uid string) {
	r, ok := l.byUID[uid]
	if !ok {
		return
	}
	delete(l.byUID, uid)
	if l.byPod[r.Pod] == uid {
		delete(l.byPod, r.Pod)
	}
	l.unindexENILocked(r)
	if shard, ok := l.where[uid]; ok {
		l.size[shard] -= l.shards[shard][uid]
		delete(l.shards[shard], uid)
		delete(l.where, uid)
		l.markLocked(shard)
	}
	delete(l.unplaced, uid)
}

// All returns every record, ordered by pod.
func (l *Ledger) All() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.byUID))
	for _, r := range l.byUID {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Pod, b.Pod) })
	return out
}

// Len is the number of records.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byUID)
}
