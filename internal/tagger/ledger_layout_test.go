package tagger

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

func layoutRecord(i int) Record {
	return Record{Pod: fmt.Sprintf("ns/p-%05d", i), UID: fmt.Sprintf("uid-%05d", i), ENI: fmt.Sprintf("eni-%05d", i),
		Tags: map[string]string{"App": "web", "Team": "dev"}, Hash: "0123456789abcdef"}
}

func kicked(l *Ledger) bool {
	select {
	case <-l.kick:
		return true
	default:
		return false
	}
}

// A burst of new records fills one shard after the other, so its writes
// touch one ConfigMap per batch, not every shard; the size trigger fires
// after BatchSize changes per shard to write.
func TestLedgerBurstFillsShardsInOrder(t *testing.T) {
	l := NewLedger(nil, LedgerOptions{Shards: 16, BatchSize: 200})
	for i := range 199 {
		l.Put(layoutRecord(i))
	}
	if kicked(l) {
		t.Fatal("a write asked for after 199 changes, want 200")
	}
	l.Put(layoutRecord(199))
	if !kicked(l) {
		t.Fatal("no write asked for after 200 changes to one shard")
	}
	shards, overflow := l.takeDirty()
	if len(shards) != 1 || len(shards[0]) != 200 || overflow != 0 {
		t.Fatalf("200 new records went to shards %v (overflow %d), want all 200 in shard 0", slices.Sorted(maps.Keys(shards)), overflow)
	}

	// Small shards: filled in order, each within its bytes.
	size := entryBytes(layoutRecord(0))
	small := NewLedger(nil, LedgerOptions{Shards: 4, MaxShardBytes: 50 * size, BatchSize: 1000})
	for i := range 120 {
		small.Put(layoutRecord(i))
	}
	shards, overflow = small.takeDirty()
	counts := map[int]int{}
	for i, data := range shards {
		counts[i] = len(data)
	}
	if want := map[int]int{0: 50, 1: 50, 2: 20}; !maps.Equal(counts, want) || overflow != 0 {
		t.Fatalf("records per shard %v (overflow %d), want %v", counts, overflow, want)
	}

	// A changed record stays in its shard; a deleted one dirties only its
	// own; with every shard full, a record waits in memory and is placed
	// once room is made.
	changed := layoutRecord(70)
	changed.Tags = map[string]string{"App": "api", "Team": "dev"}
	small.Put(changed)
	small.Delete(layoutRecord(3).Pod)
	shards, _ = small.takeDirty()
	if got := slices.Sorted(maps.Keys(shards)); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("a change in shard 1 and a deletion in shard 0 wrote shards %v", got)
	}
	for i := 120; i < 202; i++ {
		small.Put(layoutRecord(i))
	}
	if _, overflow = small.takeDirty(); overflow != 1 {
		t.Fatalf("%d records without room, want 1 (4 shards of 50, 201 records)", overflow)
	}
	small.Delete(layoutRecord(0).Pod)
	shards, overflow = small.takeDirty()
	if _, ok := shards[0][layoutRecord(201).UID]; !ok || overflow != 0 {
		t.Fatalf("the record without room was not placed when room was made (overflow %d)", overflow)
	}
}

func TestWriteDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const interval = 2 * time.Second
	for _, c := range []struct {
		name        string
		waiting     bool
		first, last time.Duration // before now
		want        bool
	}{
		{"nothing waiting", false, 20 * time.Second, 20 * time.Second, false},
		{"changes still coming", true, 3 * time.Second, 100 * time.Millisecond, false},
		{"changes paused for the interval", true, 3 * time.Second, interval, true},
		{"a burst reaches the longest wait", true, 5 * interval, 10 * time.Millisecond, true},
		{"a burst short of the longest wait", true, 5*interval - time.Millisecond, 10 * time.Millisecond, false},
	} {
		now := t0.Add(time.Minute)
		if got := writeDue(c.waiting, now.Add(-c.first), now.Add(-c.last), now, interval); got != c.want {
			t.Errorf("%s: due %v, want %v", c.name, got, c.want)
		}
	}
}
