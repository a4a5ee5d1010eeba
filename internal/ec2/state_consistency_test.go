package ec2

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// EC2 describes the process's own writes late (tags, a new ENI, a
// deleted one): a refresh or a read in between must not undo them in the
// state, or a consumer would make the write again.
func TestStateKeepsOwnWritesThroughStaleReadings(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", Tags: map[string]string{"App": "old"}}, {Subnet: "a"}}})
	d := func(v time.Duration) *emulator.Duration { return &emulator.Duration{Duration: v} }
	if err := w.emu.Configure(emulator.Config{TagDelay: d(time.Minute), VisibilityDelay: d(time.Minute), DeleteDelay: d(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := watched(t, w.client(t, Config{}), Scope{Name: "vpc"})
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	tagged, doomed := w.loaded.NetworkInterfaces[0].ID, w.loaded.NetworkInterfaces[1].ID
	if err := s.CreateTags(ctx, tagged, map[string]string{"App": "new", "Team": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTags(ctx, tagged, map[string]string{"Team": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteENI(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	made, err := s.CreateENI(ctx, awstypes.CreateENIInput{SubnetID: w.subnet, Tags: map[string]string{"Owner": "me"}})
	if err != nil {
		t.Fatal(err)
	}
	// Every reading below is stale: EC2 shows App=old, the deleted ENI,
	// and not the new one.
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetENI(ctx, tagged); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListENIs(ctx); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.ENI(tagged); !maps.Equal(e.Tags, map[string]string{"App": "new"}) {
		t.Errorf("after stale readings the state has tags %v, want the written App=new (Team written and deleted)", e.Tags)
	}
	if got := s.ENIsTagged("App", "old"); len(got) != 0 {
		t.Errorf("ENIsTagged(App=old) = %v after the process overwrote it", got)
	}
	if _, ok := s.ENI(doomed); ok {
		t.Error("the ENI this process deleted is back in the state after a stale refresh")
	}
	if _, ok := s.ENI(made.ID); !ok {
		t.Error("the ENI this process created is gone from the state after a refresh that did not list it yet")
	}
	if enis, _ := s.ENIsIn("vpc"); len(enis) != 2 {
		t.Errorf("scope holds %d ENIs, want 2 (the tagged one and the new one)", len(enis))
	}
}

// Readings trusted to show a write — taken a window after it — replace
// it: a tag someone else changed later is seen then.
func TestRecentWritesCorrect(t *testing.T) {
	t0 := time.Now()
	r := newRecentWrites()
	r.noteTags("eni-1", tagWrite{at: t0, set: map[string]string{"App": "new", "Team": "a"}})
	r.noteTags("eni-1", tagWrite{at: t0.Add(time.Second), del: map[string]string{"Team": "a", "Other": "x"}})
	r.deleted["eni-2"] = t0
	reading := awstypes.ENI{ID: "eni-1", Tags: map[string]string{"App": "old", "Other": "y"}}
	for _, tc := range []struct {
		name  string
		e     awstypes.ENI
		taken time.Time
		want  map[string]string
		ok    bool
	}{
		{"before the writes", reading, t0.Add(-time.Second), map[string]string{"App": "new", "Other": "y"}, true},
		{"inside the window", reading, t0.Add(consistencyWindow - time.Second), map[string]string{"App": "new", "Other": "y"}, true},
		{"only the delete inside", reading, t0.Add(consistencyWindow), map[string]string{"App": "old", "Other": "y"}, true},
		{"after the window", reading, t0.Add(consistencyWindow + time.Second), map[string]string{"App": "old", "Other": "y"}, true},
		{"no tags read", awstypes.ENI{ID: "eni-1"}, t0, map[string]string{"App": "new"}, true},
		{"deleted, inside", awstypes.ENI{ID: "eni-2"}, t0.Add(time.Second), nil, false},
		{"deleted, after", awstypes.ENI{ID: "eni-2"}, t0.Add(consistencyWindow), nil, true},
	} {
		got, ok := r.correct(tc.e, tc.taken)
		if ok != tc.ok || (ok && !maps.Equal(got.Tags, tc.want)) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got.Tags, ok, tc.want, tc.ok)
		}
	}
	if reading.Tags["App"] != "old" {
		t.Error("correct changed the reading it was given")
	}
	r.prune(t0.Add(consistencyWindow + time.Second))
	if len(r.tags)+len(r.deleted) != 0 {
		t.Errorf("prune left %v %v", r.tags, r.deleted)
	}
}

// A refresh of a narrow scope (the NodeENI controller's cluster tag,
// every resync interval) says nothing of the ENIs outside it: this
// process's writes to those (the tagger's tags on pod ENIs, a deletion)
// must survive it, or the state shows them as a wider refresh read them
// before the writes — and the tagger, seeing a tagged pod's ENI without
// its tags, writes them all again (test/failover's control-plane
// restarts caught one such CreateTags).
func TestNarrowRefreshKeepsOwnWritesOutsideIt(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", InterfaceType: "branch", Count: 2}, {Subnet: "a", Tags: map[string]string{"eni-operator.io/cluster": "c"}}}})
	ctx := context.Background()
	s := watched(t, w.client(t, Config{}), Scope{Name: "vpc"},
		Scope{Name: "cluster", Filters: []Filter{{Name: "tag:eni-operator.io/cluster", Values: []string{"c"}}}})
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	tagged, deleted, member := w.loaded.NetworkInterfaces[0].ID, w.loaded.NetworkInterfaces[1].ID, w.loaded.NetworkInterfaces[2].ID
	want := map[string]string{"App": "a", "eni-tagger.io/hash": "h"}
	if err := s.CreateTags(ctx, tagged, want); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteENI(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	// Someone else tags the scope's own ENI: the narrow refresh shows
	// that.
	if err := w.client(t, Config{}).CreateTags(ctx, member, map[string]string{"Extra": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx, "cluster"); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.ENI(tagged); !maps.Equal(e.Tags, want) {
		t.Errorf("after a refresh of another scope the tagged ENI has tags %v, want %v", e.Tags, want)
	}
	if got := s.ENIsTagged("App", "a"); len(got) != 1 {
		t.Errorf("ENIsTagged(App=a) = %d ENIs, want 1", len(got))
	}
	if _, ok := s.ENI(deleted); ok {
		t.Error("the ENI this process deleted is back after a refresh of another scope")
	}
	if e, _ := s.ENI(member); e.Tags["Extra"] != "x" {
		t.Errorf("the refreshed scope's ENI has tags %v, want the Extra=x set in EC2", e.Tags)
	}
	// A refresh of the whole VPC reads them all: the state is EC2's.
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.ENI(tagged); !maps.Equal(e.Tags, want) {
		t.Errorf("after a refresh of the VPC the tagged ENI has tags %v, want %v", e.Tags, want)
	}
	if enis, _ := s.ENIsIn("vpc"); len(enis) != 2 {
		t.Errorf("the VPC holds %d ENIs, want 2", len(enis))
	}
}

// Writes are forgotten once every reading is trusted to show them, at
// the next write a window later, not only at the next refresh (which may
// be minutes away after a burst).
func TestRecentWritesPrunedAsWritesCome(t *testing.T) {
	r := newRecentWrites()
	t0 := time.Now()
	r.noteTags("eni-1", tagWrite{at: t0, set: map[string]string{"A": "1"}})
	r.noteTags("eni-2", tagWrite{at: t0.Add(consistencyWindow - time.Second), set: map[string]string{"B": "1"}})
	if len(r.tags) != 2 {
		t.Fatalf("writes within a window pruned: %v", r.tags)
	}
	r.noteTags("eni-3", tagWrite{at: t0.Add(consistencyWindow), set: map[string]string{"C": "1"}})
	if _, ok := r.tags["eni-1"]; ok || len(r.tags) != 2 {
		t.Fatalf("after a window, want eni-2 and eni-3 only: %v", r.tags)
	}
}
