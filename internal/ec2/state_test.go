package ec2

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

func watched(t testing.TB, c *Client, scopes ...Scope) *State {
	t.Helper()
	s := NewState(c)
	for _, sc := range scopes {
		if err := s.Watch(sc); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A refresh of 5,000 ENIs costs 5 calls, and the state answers lookups
// by ID, primary/secondary/IPv6 address, delegated prefix and tag.
func TestStateRefresh(t *testing.T) {
	w := newWorld(t, emulator.World{
		Instances: []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a", SecondaryIPCount: 3}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{
			{Subnet: "a", InterfaceType: "branch", Count: 4998},
			{Subnet: "a", IPv4PrefixCount: 1, IPv6Addresses: []string{"2600:1f18::9"}, Tags: map[string]string{"owner": "me"}},
			{Subnet: "other-a", Count: 10}, // another VPC: not in the state
		},
	})
	s := watched(t, w.client(t, Config{}), Scope{Name: "vpc"})
	s.IndexTag("owner")
	refreshed, err := s.Subscribe("vpc")
	if err != nil {
		t.Fatal(err)
	}
	if s.Synced("vpc") {
		t.Fatal("synced before a refresh")
	}
	if err := s.Refresh(context.Background(), "vpc"); err != nil {
		t.Fatal(err)
	}
	if enis, taken := s.ENIsIn("vpc"); len(enis) != 5000 || taken.IsZero() {
		t.Fatalf("state holds %d ENIs (taken %v), want 5000 (the VPC's only)", len(enis), taken)
	}
	if n := w.calls("DescribeNetworkInterfaces"); n != 5 {
		t.Fatalf("refresh of 5000 ENIs cost %d calls, want 5", n)
	}
	select {
	case <-refreshed:
	default:
		t.Fatal("subscriber not told of the refresh")
	}
	if !s.Synced("vpc") {
		t.Fatal("not synced after a refresh")
	}
	inst := w.loaded.Instances[0]
	if e, ok := s.ENIByIP(inst.SecondaryIPs[2]); !ok || e.ID != inst.PrimaryENI {
		t.Fatalf("secondary IP lookup: %v %v", e.ID, ok)
	}
	special := w.loaded.NetworkInterfaces[4998]
	e, ok := s.ENI(special.ID)
	if !ok || len(e.IPv4Prefixes) != 1 {
		t.Fatalf("ENI: %+v %v", e, ok)
	}
	inPrefix := e.IPv4Prefixes[0].Addr().Next().Next().String()
	if got, ok := s.ENIByIP(inPrefix); !ok || got.ID != special.ID {
		t.Fatalf("address %s inside delegated prefix %s: got %q %v", inPrefix, e.IPv4Prefixes[0], got.ID, ok)
	}
	if got, ok := s.ENIByIP("2600:1f18::9"); !ok || got.ID != special.ID {
		t.Fatalf("IPv6 lookup: %q %v", got.ID, ok)
	}
	if got := s.ENIsTagged("owner", "me"); len(got) != 1 || got[0].ID != special.ID {
		t.Fatalf("ENIsTagged: %v", got)
	}
	if _, ok := s.ENIByIP(w.loaded.NetworkInterfaces[4999].PrivateIP); ok {
		t.Fatal("an ENI of another VPC is in the state")
	}
}

// On-demand refreshes: concurrent callers share one refresh, and a scope
// read less than maxAge ago is answered without a call.
func TestFreshCoalescesOnDemandRefreshes(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 1500}}})
	s := watched(t, w.client(t, Config{}), Scope{Name: "vpc"})
	const maxAge = time.Minute
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Fresh(context.Background(), "vpc", maxAge); err != nil {
				t.Errorf("Fresh: %v", err)
			}
		}()
	}
	wg.Wait()
	if enis, _ := s.ENIsIn("vpc"); len(enis) != 1500 {
		t.Fatalf("%d ENIs after the refresh, want 1500", len(enis))
	}
	if n := w.calls("DescribeNetworkInterfaces"); n != 2 {
		t.Fatalf("100 concurrent on-demand refreshes of 1,500 ENIs cost %d calls, want 2 (one refresh of two pages)", n)
	}
	if err := s.Fresh(context.Background(), "vpc", maxAge); err != nil {
		t.Fatal(err)
	}
	if n := w.calls("DescribeNetworkInterfaces"); n != 2 {
		t.Fatalf("a refresh within maxAge called EC2: %d calls, want still 2", n)
	}
}

// Two consumers' scopes share one picture: a refresh of the whole VPC
// covers the narrower scope (one call, both synced), and a refresh of the
// narrower scope replaces only its own ENIs.
func TestScopesShareOnePicture(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", InterfaceType: "branch", Count: 3},
		{Subnet: "a", Count: 2, Tags: map[string]string{"cluster": "c1"}},
	}})
	c := w.client(t, Config{})
	s := watched(t, c, Scope{Name: "mine", Filters: []Filter{{Name: "tag:cluster", Values: []string{"c1"}}}}, Scope{Name: "vpc"})
	mine, _ := s.Subscribe("mine")
	if err := s.Refresh(context.Background(), "vpc"); err != nil {
		t.Fatal(err)
	}
	if !s.Synced("mine") || w.calls("DescribeNetworkInterfaces") != 1 {
		t.Fatalf("a VPC refresh did not cover the tagged scope: synced %v, %d calls", s.Synced("mine"), w.calls("DescribeNetworkInterfaces"))
	}
	<-mine
	tagged := w.loaded.NetworkInterfaces[3].ID
	if err := c.DeleteENI(context.Background(), tagged); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(context.Background(), "mine"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ENI(tagged); ok {
		t.Fatal("an ENI deleted in EC2 is still there after its scope was refreshed")
	}
	if all, _ := s.ENIsIn("vpc"); len(all) != 4 {
		t.Fatalf("%d ENIs in the VPC scope after refreshing the tagged one, want 4 (the untagged three kept)", len(all))
	}
	if got, _ := s.ENIsIn("mine"); len(got) != 1 {
		t.Fatalf("%d ENIs in the tagged scope, want 1", len(got))
	}
}

// The state's own writes are visible at once, before any refresh; a
// reading older than what the state holds does not undo them.
func TestOwnWritesAreVisibleAtOnce(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 1}}})
	c := w.client(t, Config{})
	s := watched(t, c, Scope{Name: "vpc"})
	ctx := context.Background()
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	id := w.loaded.NetworkInterfaces[0].ID
	before, _ := s.ENI(id)
	if err := s.CreateTags(ctx, id, map[string]string{"team": "a", "env": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTags(ctx, id, map[string]string{"env": "x"}); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.ENI(id); e.Tags["team"] != "a" || e.Tags["env"] != "" {
		t.Fatalf("tags after own writes: %v", e.Tags)
	}
	s.Observe(before, time.Now().Add(-time.Hour))
	if e, _ := s.ENIByIP(before.PrimaryIP); e.Tags["team"] != "a" {
		t.Fatalf("an older reading replaced a newer write: %v", e.Tags)
	}
	calls := w.calls("DescribeNetworkInterfaces")
	if err := s.DeleteENI(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ENI(id); ok {
		t.Fatal("a deleted ENI is still there")
	}
	if _, ok := s.ENIByIP(before.PrimaryIP); ok {
		t.Fatal("a deleted ENI is still found by its address")
	}
	if n := w.calls("DescribeNetworkInterfaces"); n != calls {
		t.Fatalf("own writes cost %d describe calls, want 0", n-calls)
	}
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.ENIsIn("vpc"); len(all) != 0 {
		t.Fatalf("%d ENIs after the refresh, want 0", len(all))
	}
}

// The schedule: every scope is due at once; after a refresh of the widest
// the others it covers are not; the next is due one interval on.
func TestNextDue(t *testing.T) {
	s := watched(t, nil, Scope{Name: "narrow", Filters: []Filter{{Name: "tag:k", Values: []string{"v"}}}, Interval: time.Minute},
		Scope{Name: "wide", Interval: 5 * time.Minute})
	now := time.Now()
	if due, _ := s.nextDue(now); due == nil || due.Name != "wide" {
		t.Fatalf("first due: %v, want the widest scope", due)
	}
	s.install(s.scope("wide"), nil, now)
	due, wait := s.nextDue(now)
	if due != nil || wait != time.Minute {
		t.Fatalf("after a covering refresh: due %v, wait %v; want none for 1m", due, wait)
	}
	if due, _ := s.nextDue(now.Add(time.Minute)); due == nil || due.Name != "narrow" {
		t.Fatalf("a minute on: %v, want the narrow scope", due)
	}
}

func TestWatchRefusesFiltersItCannotApply(t *testing.T) {
	s := NewState(nil)
	if err := s.Watch(Scope{Name: "x", Filters: []Filter{{Name: "attachment.status", Values: []string{"attached"}}}}); err == nil {
		t.Fatal("a scope with a filter the state cannot apply locally was accepted")
	}
	if err := s.Watch(Scope{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(Scope{Name: "x"}); err == nil {
		t.Fatal("a scope watched twice was accepted")
	}
}

// A burst tags thousands of ENIs with a few tag sets: until the next
// refresh the state holds one map per set for them, not one per ENI, and
// a caller's map is never kept (it may reuse it).
func TestOwnTagWritesShareTagSets(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 40}}})
	s := watched(t, w.client(t, Config{}), Scope{Name: "vpc"})
	ctx := context.Background()
	if err := s.Refresh(ctx, "vpc"); err != nil {
		t.Fatal(err)
	}
	maps := map[uintptr]bool{}
	for i, e := range w.loaded.NetworkInterfaces {
		tags := map[string]string{"team": string(rune('a' + i%2))}
		if err := s.CreateTags(ctx, e.ID, tags); err != nil {
			t.Fatal(err)
		}
		tags["team"] = "changed by its caller"
		got, _ := s.ENI(e.ID)
		if got.Tags["team"] != string(rune('a'+i%2)) {
			t.Fatalf("ENI %d: tags %v; the caller's later change leaked in", i, got.Tags)
		}
		maps[reflect.ValueOf(got.Tags).Pointer()] = true
	}
	if len(maps) != 2 {
		t.Errorf("40 ENIs tagged with 2 tag sets hold %d maps; want 2", len(maps))
	}
}
