package tagger

import (
	"maps"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

	// mu guards the records and where they are written.
	mu      sync.Mutex
	records recordIndex
	shards  shardLayout
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
	kick := make(chan struct{}, 1)
	return &Ledger{c: c, o: o, loaded: make(chan struct{}), kick: kick,
		records: newRecordIndex(), shards: newShardLayout(o, kick)}
}

// Get returns the record of a pod (namespace/name).
func (l *Ledger) Get(pod string) (Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records.ofPod(pod)
}

// Put stores a record, replacing the pod's previous one.
func (l *Ledger) Put(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefer := -1
	if old, ok := l.records.byPod[r.Pod]; ok {
		if l.records.byUID[old].equal(r) {
			return // nothing changed: a restart in sync writes no ConfigMap
		}
		if old == r.UID {
			prefer = l.shards.of(old)
		}
		l.removeLocked(old)
	}
	l.records.add(r)
	l.shards.place(r.UID, entryBytes(r), prefer)
}

// Delete forgets a pod's record.
func (l *Ledger) Delete(pod string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.records.byPod[pod]; ok {
		l.removeLocked(uid)
	}
}

func (l *Ledger) removeLocked(uid string) {
	if l.records.remove(uid) {
		l.shards.drop(uid)
	}
}

// OnENI returns the records of the pods on one ENI.
func (l *Ledger) OnENI(eni string) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records.onENI(eni)
}

// All returns every record, ordered by pod.
func (l *Ledger) All() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records.all()
}

// Len is the number of records.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records.byUID)
}
