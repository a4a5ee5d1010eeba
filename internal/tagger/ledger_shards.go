package tagger

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxWaitIntervals bounds, in batch intervals, how long a change waits
// to be written while changes keep coming (a burst).
const maxWaitIntervals = 5

func (l *Ledger) shardName(i int) string { return fmt.Sprintf("%s-%02d", l.o.Name, i) }

// entryBytes is what a record weighs in a ConfigMap's data.
func entryBytes(r Record) int {
	raw, _ := json.Marshal(r)
	return len(r.UID) + len(raw)
}

// Load reads every shard. Start calls it; tests and one-shot commands may
// call it directly.
func (l *Ledger) Load(ctx context.Context) error {
	type loadedRecord struct {
		shard int
		r     Record
	}
	var found []loadedRecord
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
		for _, uid := range slices.Sorted(maps.Keys(cm.Data)) {
			var r Record
			if err := json.Unmarshal([]byte(cm.Data[uid]), &r); err != nil || r.UID != uid {
				log.FromContext(ctx).Info("ignoring a malformed ledger entry", "configMap", cm.Name, "key", uid)
				continue
			}
			found = append(found, loadedRecord{i, r})
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.loaded:
		return nil // loaded before; memory is newer than the ConfigMaps
	default:
	}
	for _, f := range found {
		if _, dup := l.records.byUID[f.r.UID]; dup {
			// In two shards (a version that spread records by hash wrote
			// it again elsewhere): the later shard is rewritten without it.
			l.shards.mark(f.shard)
			continue
		}
		l.records.add(f.r)
		l.shards.restore(f.shard, f.r.UID, entryBytes(f.r))
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
		retry := l.o.Clock.NewTimer(2 * time.Second)
		select {
		case <-ctx.Done():
			retry.Stop()
			return nil
		case <-retry.C():
		}
	}
	t := l.o.Clock.NewTicker(max(l.o.BatchInterval/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return l.Flush(flushCtx)
		case now := <-t.C():
			l.mu.Lock()
			due := l.shards.due(now, l.o.BatchInterval)
			l.mu.Unlock()
			if !due {
				continue
			}
		case <-l.kick:
		}
		if err := l.Flush(ctx); err != nil {
			log.FromContext(ctx).Error(err, "writing the tag ledger; will retry")
		}
	}
}

// writeDue decides when changes that are waiting are written: once they
// have stopped for interval, or maxWaitIntervals intervals after the
// first of them — so a burst is written in few large writes, and a
// change is never kept in memory only for long.
func writeDue(waiting bool, first, last, now time.Time, interval time.Duration) bool {
	return waiting && (now.Sub(last) >= interval || now.Sub(first) >= maxWaitIntervals*interval)
}

// NeedLeaderElection makes only the leader write the ledger.
func (l *Ledger) NeedLeaderElection() bool { return true }

// Flush writes every changed shard with server-side apply. A shard is
// written whole from memory, so records deleted since are gone from it.
func (l *Ledger) Flush(ctx context.Context) error {
	l.flushing.Lock()
	defer l.flushing.Unlock()
	shards, overflow := l.takeDirty()
	if overflow > 0 && len(shards) > 0 {
		log.FromContext(ctx).Error(nil, "ledger full: records kept in memory only; raise --cache-shards", "records", overflow)
	}
	var failed []int
	var firstErr error
	for _, i := range slices.Sorted(maps.Keys(shards)) {
		data := shards[i]
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
			bytes := 0
			for k, v := range data {
				bytes += len(k) + len(v)
			}
			l.o.OnFlush(i, len(data), bytes, overflow)
			overflow = 0 // told once per flush
		}
	}

	if len(failed) > 0 {
		l.mu.Lock()
		for _, i := range failed {
			l.shards.mark(i)
		}
		l.mu.Unlock()
	}
	return firstErr
}

// takeDirty returns the content of every changed shard and how many
// records no shard has room for, and starts a new batch.
func (l *Ledger) takeDirty() (map[int]map[string]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dirty, overflow := l.shards.takeBatch()
	if l.o.MemoryOnly {
		return nil, overflow
	}
	shards := make(map[int]map[string]string, len(dirty))
	for i, uids := range dirty {
		data := make(map[string]string, len(uids))
		for _, uid := range uids {
			raw, _ := json.Marshal(l.records.byUID[uid])
			data[uid] = string(raw)
		}
		shards[i] = data
	}
	return shards, overflow
}

// shardLayout says which ConfigMap shard holds each record and which
// shards have changes not yet written. The Ledger's lock guards it.
type shardLayout struct {
	maxBytes, batchSize int
	clock               clock.PassiveClock
	kick                chan<- struct{}
	// byShard[i] holds the records of ConfigMap i (UID -> bytes), and
	// unplaced those no shard had room for; where maps a UID to its shard.
	byShard  []map[string]int
	size     []int
	unplaced map[string]int
	where    map[string]int
	dirty    map[int]bool
	changed  int
	// first and last are when the oldest and newest change not yet
	// written were made.
	first, last time.Time
}

func newShardLayout(o LedgerOptions, kick chan<- struct{}) shardLayout {
	s := shardLayout{maxBytes: o.MaxShardBytes, batchSize: o.BatchSize, clock: o.Clock, kick: kick,
		byShard: make([]map[string]int, o.Shards), size: make([]int, o.Shards),
		unplaced: map[string]int{}, where: map[string]int{}, dirty: map[int]bool{}}
	for i := range s.byShard {
		s.byShard[i] = map[string]int{}
	}
	return s
}

// of is the shard that holds uid, -1 if none.
func (s *shardLayout) of(uid string) int {
	if i, ok := s.where[uid]; ok {
		return i
	}
	return -1
}

// place puts a record of n bytes in shard prefer if it has room, else in
// the first shard that has, else in none (memory only).
func (s *shardLayout) place(uid string, n, prefer int) {
	shard := -1
	if prefer >= 0 && s.size[prefer]+n <= s.maxBytes {
		shard = prefer
	}
	for i := 0; shard < 0 && i < len(s.byShard); i++ {
		if s.size[i]+n <= s.maxBytes {
			shard = i
		}
	}
	if shard < 0 {
		s.unplaced[uid] = n
		s.changed++
		return
	}
	s.byShard[shard][uid] = n
	s.size[shard] += n
	s.where[uid] = shard
	s.mark(shard)
}

// restore notes a record read from shard, which needs no write.
func (s *shardLayout) restore(shard int, uid string, n int) {
	s.byShard[shard][uid] = n
	s.size[shard] += n
	s.where[uid] = shard
}

// drop takes a removed record out of its shard.
func (s *shardLayout) drop(uid string) {
	if shard, ok := s.where[uid]; ok {
		s.size[shard] -= s.byShard[shard][uid]
		delete(s.byShard[shard], uid)
		delete(s.where, uid)
		s.mark(shard)
	}
	delete(s.unplaced, uid)
}

// mark notes a change to a shard, and asks for a write at once when
// enough changes wait for each shard to be written.
func (s *shardLayout) mark(shard int) {
	s.dirty[shard] = true
	s.changed++
	now := s.clock.Now()
	if s.first.IsZero() {
		s.first = now
	}
	s.last = now
	if s.changed >= s.batchSize*len(s.dirty) {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// due tells whether the changes waiting should be written now.
func (s *shardLayout) due(now time.Time, interval time.Duration) bool {
	return writeDue(len(s.dirty) > 0, s.first, s.last, now, interval)
}

// takeBatch returns the UIDs of every changed shard and how many records
// no shard has room for, and starts a new batch. Records that found no
// room before are placed first, if room has been made since.
func (s *shardLayout) takeBatch() (map[int][]string, int) {
	for _, uid := range slices.Sorted(maps.Keys(s.unplaced)) {
		n := s.unplaced[uid]
		delete(s.unplaced, uid)
		s.place(uid, n, -1)
	}
	dirty := make(map[int][]string, len(s.dirty))
	for i := range s.dirty {
		dirty[i] = slices.Collect(maps.Keys(s.byShard[i]))
	}
	s.dirty = map[int]bool{}
	s.changed = 0
	s.first, s.last = time.Time{}, time.Time{}
	return dirty, len(s.unplaced)
}
