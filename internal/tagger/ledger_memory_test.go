package tagger

import (
	"reflect"
	"slices"
	"testing"
)

// TestLedgerSharesTagSets: records with equal tags hold one map, a set is
// dropped with its last record, and the ENI index follows replacements
// and deletions (pure: a memory-only ledger).
func TestLedgerSharesTagSets(t *testing.T) {
	l := NewLedger(nil, LedgerOptions{MemoryOnly: true})
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	l.Put(Record{Pod: "ns/a", UID: "ua", ENI: "eni-1", Tags: map[string]string{"team": "x", "env": "prod"}, Hash: "h1"})
	l.Put(Record{Pod: "ns/b", UID: "ub", ENI: "eni-1", Tags: map[string]string{"env": "prod", "team": "x"}, Hash: "h1"})
	l.Put(Record{Pod: "ns/c", UID: "uc", ENI: "eni-2", Tags: map[string]string{"team": "y"}, Hash: "h2"})
	a, _ := l.Get("ns/a")
	b, _ := l.Get("ns/b")
	c, _ := l.Get("ns/c")
	if !same(a.Tags, b.Tags) || same(a.Tags, c.Tags) {
		t.Fatalf("equal tag sets must share one map, different ones not: a=%p b=%p c=%p", a.Tags, b.Tags, c.Tags)
	}
	if n := len(l.records.tagSets); n != 2 {
		t.Fatalf("%d tag sets held, want 2", n)
	}
	uids := func(eni string) []string {
		var out []string
		for _, r := range l.OnENI(eni) {
			out = append(out, r.UID)
		}
		slices.Sort(out)
		return out
	}
	if got := uids("eni-1"); !slices.Equal(got, []string{"ua", "ub"}) {
		t.Fatalf("OnENI(eni-1) = %v", got)
	}

	// b moves to eni-2 with c's tags: eni-1 keeps a, a's set keeps one
	// reference.
	l.Put(Record{Pod: "ns/b", UID: "ub", ENI: "eni-2", Tags: map[string]string{"team": "y"}, Hash: "h2"})
	if got := uids("eni-1"); !slices.Equal(got, []string{"ua"}) {
		t.Fatalf("after the move OnENI(eni-1) = %v", got)
	}
	if got := uids("eni-2"); !slices.Equal(got, []string{"ub", "uc"}) {
		t.Fatalf("after the move OnENI(eni-2) = %v", got)
	}
	l.Delete("ns/a")
	if _, ok := l.records.byENI["eni-1"]; ok {
		t.Fatal("eni-1 still indexed with no record on it")
	}
	if n := len(l.records.tagSets); n != 1 {
		t.Fatalf("%d tag sets held after the last record of one went, want 1", n)
	}
	l.Delete("ns/b")
	l.Delete("ns/c")
	if len(l.records.tagSets) != 0 || len(l.records.byENI) != 0 || l.Len() != 0 {
		t.Fatalf("empty ledger still holds %d tag sets, %d ENIs, %d records", len(l.records.tagSets), len(l.records.byENI), l.Len())
	}
}
