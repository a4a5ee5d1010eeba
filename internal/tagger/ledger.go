package tagger

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
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
	// Shards is the number of ConfigMaps records are spread over (by a
	// hash of the pod UID), so the ledger scales past one object's size.
	Shards int
	// MaxShardBytes bounds one ConfigMap's data; records that would push a
	// shard past it stay in memory only and are reported.
	MaxShardBytes int
	// BatchInterval and BatchSize decide when changes are written: after
	// BatchInterval, or at once when BatchSize records changed.
	BatchInterval time.Duration
	BatchSize     int
	// FieldOwner is the server-side apply field manager.
	FieldOwner string
	// MemoryOnly keeps records in memory and never touches ConfigMaps
	// (--enable-cache-configmap=false).
	MemoryOnly bool
	// OnFlush, when set, is told of every ConfigMap write (for metrics).
	OnFlush func(shard, records, bytes, overflow int)
}

// Ledger is the operator's record of what it applied, persisted to
// ConfigMaps in its own namespace. Memory is authoritative (only the
// leader writes), each write replaces a shard's whole content, so a
// deleted record can never come back from a stale write.
type Ledger struct {
	c      client.Client
	o      LedgerOptions
	loaded chan struct{}
	kick   chan struct{}
	// flushing serialises Flush: two writes of one shard built at
	// different times could otherwise land in the wrong order.
	flushing sync.Mutex

	mu      sync.Mutex
	byUID   map[string]Record
	byPod   map[string]string          // namespace/name -> UID
	byENI   map[string]map[string]bool // ENI ID -> UIDs
	dirty   map[int]bool
	changed int
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
		o.BatchSize = 20
	}
	if o.FieldOwner == "" {
		o.FieldOwner = "eni-operator"
	}
	return &Ledger{c: c, o: o, loaded: make(chan struct{}), kick: make(chan struct{}, 1),
		byUID: map[string]Record{}, byPod: map[string]string{}, byENI: map[string]map[string]bool{}, dirty: map[int]bool{}}
}

func (l *Ledger) shardName(i int) string { return fmt.Sprintf("%s-%02d", l.o.Name, i) }

func (l *Ledger) shardOf(uid string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return int(h.Sum32() % uint32(l.o.Shards))
}

// Load reads every shard. Start calls it; tests and one-shot commands may
// call it directly.
func (l *Ledger) Load(ctx context.Context) error {
	byUID := map[string]Record{}
	for i := range l.o.Shards {
		if l.o.MemoryOnly {
			break
		}
		var cm corev1.ConfigMap
		err := l.c.Get(ctx, client.ObjectKey{Namespace: l.o.Namespace, Name: l.shardName(i)}, &cm)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading ledger ConfigMap %s/%s: %w", l.o.Namespace, l.shardName(i), err)
		}
		for uid, raw := range cm.Data {
			var r Record
			if err := json.Unmarshal([]byte(raw), &r); err != nil || r.UID != uid {
				log.FromContext(ctx).Info("ignoring a malformed ledger entry", "configMap", cm.Name, "key", uid)
				continue
			}
			byUID[uid] = r
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.loaded:
		return nil // loaded before; memory is newer than the ConfigMaps
	default:
	}
	for _, r := range byUID {
		l.addLocked(r)
	}
	close(l.loaded)
	return nil
}

// WaitLoaded blocks until the ledger has been read, so no reconcile acts
// on a pod before knowing what was applied for it.
func (l *Ledger) WaitLoaded(ctx context.Context) error {
	select {
	case <-l.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start loads the ledger (retrying until it succeeds), then writes
// changes in batches until ctx ends, and flushes once more on the way out.
func (l *Ledger) Start(ctx context.Context) error {
	for {
		err := l.Load(ctx)
		if err == nil {
			break
		}
		log.FromContext(ctx).Error(err, "loading the tag ledger; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	t := time.NewTicker(l.o.BatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return l.Flush(flushCtx)
		case <-t.C:
		case <-l.kick:
		}
		if err := l.Flush(ctx); err != nil {
			log.FromContext(ctx).Error(err, "writing the tag ledger; will retry")
		}
	}
}

// NeedLeaderElection makes only the leader write the ledger.
func (l *Ledger) NeedLeaderElection() bool { return true }

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
	if old, ok := l.byPod[r.Pod]; ok && l.byUID[old].equal(r) {
		return // nothing changed: a restart in sync writes no ConfigMap
	}
	if old, ok := l.byPod[r.Pod]; ok {
		l.removeLocked(old)
		l.markLocked(old)
	}
	l.addLocked(r)
	l.markLocked(r.UID)
}

// Delete forgets a pod's record.
func (l *Ledger) Delete(pod string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid, ok := l.byPod[pod]; ok {
		l.removeLocked(uid)
		l.markLocked(uid)
	}
}

// OnENI returns the records of the pods on one ENI.
func (l *Ledger) OnENI(eni string) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.byENI[eni]))
	for uid := range l.byENI[eni] {
		out = append(out, l.byUID[uid])
	}
	return out
}

func (l *Ledger) addLocked(r Record) {
	l.byUID[r.UID] = r
	l.byPod[r.Pod] = r.UID
	if l.byENI[r.ENI] == nil {
		l.byENI[r.ENI] = map[string]bool{}
	}
	l.byENI[r.ENI][r.UID] = true
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
	delete(l.byENI[r.ENI], uid)
	if len(l.byENI[r.ENI]) == 0 {
		delete(l.byENI, r.ENI)
	}
}

func (l *Ledger) markLocked(uid string) {
	l.dirty[l.shardOf(uid)] = true
	l.changed++
	if l.changed >= l.o.BatchSize {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
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

// Flush writes every changed shard with server-side apply. A shard is
// written whole from memory, so records deleted since are gone from it.
func (l *Ledger) Flush(ctx context.Context) error {
	l.flushing.Lock()
	defer l.flushing.Unlock()
	l.mu.Lock()
	if len(l.dirty) == 0 || l.o.MemoryOnly {
		l.mu.Unlock()
		return nil
	}
	shards := make(map[int]map[string]string, len(l.dirty))
	for i := range l.dirty {
		shards[i] = map[string]string{}
	}
	uids := make([]string, 0, len(l.byUID))
	for uid := range l.byUID {
		if _, ok := shards[l.shardOf(uid)]; ok {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids) // a full shard keeps the same records on every write
	overflow := map[int]int{}
	size := map[int]int{}
	for _, uid := range uids {
		i := l.shardOf(uid)
		raw, _ := json.Marshal(l.byUID[uid])
		if size[i]+len(uid)+len(raw) > l.o.MaxShardBytes {
			overflow[i]++
			continue
		}
		size[i] += len(uid) + len(raw)
		shards[i][uid] = string(raw)
	}
	l.dirty = map[int]bool{}
	l.changed = 0
	l.mu.Unlock()

	var failed []int
	var firstErr error
	for i, data := range shards {
		cm := corev1ac.ConfigMap(l.shardName(i), l.o.Namespace).
			WithLabels(map[string]string{"app.kubernetes.io/managed-by": "eni-operator", "eni-operator.io/ledger": l.o.Name}).
			WithData(data)
		if err := l.c.Apply(ctx, cm, client.FieldOwner(l.o.FieldOwner), client.ForceOwnership); err != nil {
			failed = append(failed, i)
			if firstErr == nil {
				firstErr = fmt.Errorf("writing ledger ConfigMap %s/%s: %w", l.o.Namespace, l.shardName(i), err)
			}
			continue
		}
		if l.o.OnFlush != nil {
			l.o.OnFlush(i, len(data), size[i], overflow[i])
		}
		if overflow[i] > 0 {
			log.FromContext(ctx).Error(nil, "ledger shard full: records kept in memory only; raise the shard count",
				"configMap", l.shardName(i), "records", overflow[i])
		}
	}
	if len(failed) > 0 {
		l.mu.Lock()
		for _, i := range failed {
			l.dirty[i] = true
		}
		l.mu.Unlock()
	}
	return firstErr
}
