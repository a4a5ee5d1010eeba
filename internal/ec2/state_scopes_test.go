package ec2

import (
	"context"
	"maps"
	"testing"

	"github.com/eni-operator/eni-operator/internal/emulator"
)

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
