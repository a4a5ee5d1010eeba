package tagger

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// fakeEC2 is the tagger's EC2 interface over a map, counting the calls
// that would go to AWS.
type fakeEC2 struct {
	known   map[string]awstypes.ENI // what the state holds, by ID
	inEC2   map[string]awstypes.ENI // what a lookup or a refresh would find
	lookups int
	freshes int
	// unsynced: the inventory has not been read yet (until a Fresh).
	unsynced bool
}

func (f *fakeEC2) Synced(string) bool { return !f.unsynced || f.freshes > 0 }

func (f *fakeEC2) ENI(id string) (awstypes.ENI, bool) { e, ok := f.known[id]; return e, ok }

func (f *fakeEC2) ENIByIP(ip string) (awstypes.ENI, bool) {
	for _, e := range f.known {
		if e.Holds(ip) {
			return e, true
		}
	}
	return awstypes.ENI{}, false
}

func (f *fakeEC2) LookupByIP(_ context.Context, ip string) (awstypes.ENI, error) {
	f.lookups++
	for _, e := range f.inEC2 {
		if e.PrimaryIP == ip {
			return e, nil
		}
	}
	return awstypes.ENI{}, notFound{}
}

func (f *fakeEC2) Fresh(context.Context, string, time.Duration) error {
	f.freshes++
	for id, e := range f.inEC2 {
		f.known[id] = e
	}
	return nil
}

func (f *fakeEC2) CreateTags(context.Context, string, map[string]string) error { return nil }
func (f *fakeEC2) DeleteTags(context.Context, string, map[string]string) error { return nil }

// notFound is EC2's answer for an address no ENI holds.
type notFound struct{}

func (notFound) Error() string                 { return "InvalidNetworkInterfaceID.NotFound" }
func (notFound) ErrorCode() string             { return "InvalidNetworkInterfaceID.NotFound" }
func (notFound) ErrorMessage() string          { return "no ENI holds the address" }
func (notFound) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// resolve finds a pod's ENI from what is known first, then with one
// lookup, and only then (an address inside a delegated prefix, which a
// lookup cannot find) with an inventory refresh.
func TestResolveAsksEC2OnlyForWhatItDoesNotKnow(t *testing.T) {
	branch := awstypes.ENI{ID: "eni-b", PrimaryIP: "10.0.0.5"}
	prefixed := awstypes.ENI{ID: "eni-p", PrimaryIP: "10.0.1.4", IPv4Prefixes: prefixes(t, "10.0.2.0/28")}
	cases := []struct {
		name             string
		known            []awstypes.ENI
		ip               string
		inventory        bool
		want             string
		lookups, freshes int
	}{
		{"known: no call", []awstypes.ENI{branch}, "10.0.0.5", true, "eni-b", 0, 0},
		{"unknown: one lookup", nil, "10.0.0.5", true, "eni-b", 1, 0},
		{"inside a prefix: a lookup, then a refresh", nil, "10.0.2.7", true, "eni-p", 1, 1},
		{"inside a prefix, no inventory: not found", nil, "10.0.2.7", false, "", 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeEC2{known: map[string]awstypes.ENI{}, inEC2: map[string]awstypes.ENI{branch.ID: branch, prefixed.ID: prefixed}}
			for _, e := range c.known {
				f.known[e.ID] = e
			}
			r := eniFinder{ec2: f, inventory: c.inventory, fromMemory: DefaultOptions().ResolveFromMemory, lookups: newMetrics(nil, nil).resolved}
			e, err := r.find(context.Background(), &slot{of: newSlots(1)}, c.ip, Record{}, false)
			if got := e.ID; got != c.want || (c.want == "" && !ec2.IsNotFound(err)) {
				t.Fatalf("resolved %q (%v), want %q", got, err, c.want)
			}
			if f.lookups != c.lookups || f.freshes != c.freshes {
				t.Fatalf("%d lookups and %d refreshes, want %d and %d", f.lookups, f.freshes, c.lookups, c.freshes)
			}
		})
	}
}

// Before the first inventory is read, a pod waits for it (Fresh joins
// the read under way) instead of looking its address up; a pod whose
// address the inventory does not know is then looked up as ever.
func TestResolveWaitsForTheFirstInventory(t *testing.T) {
	branch := awstypes.ENI{ID: "eni-b", PrimaryIP: "10.0.0.5"}
	outside := awstypes.ENI{ID: "eni-o", PrimaryIP: "10.9.0.5"}
	f := &fakeEC2{known: map[string]awstypes.ENI{}, inEC2: map[string]awstypes.ENI{branch.ID: branch}, unsynced: true}
	r := eniFinder{ec2: f, inventory: true, fromMemory: DefaultOptions().ResolveFromMemory, lookups: newMetrics(nil, nil).resolved}
	if e, err := r.find(context.Background(), &slot{of: newSlots(1)}, "10.0.0.5", Record{}, false); err != nil || e.ID != "eni-b" {
		t.Fatalf("resolved %q (%v), want eni-b", e.ID, err)
	}
	if f.lookups != 0 || f.freshes != 1 {
		t.Fatalf("%d lookups and %d inventory reads, want 0 and 1", f.lookups, f.freshes)
	}
	// Read once: the next miss is looked up, and no second read waits.
	f.inEC2[outside.ID] = outside
	delete(f.known, outside.ID)
	if e, err := r.find(context.Background(), &slot{of: newSlots(1)}, "10.9.0.5", Record{}, false); err != nil || e.ID != "eni-o" {
		t.Fatalf("resolved %q (%v), want eni-o", e.ID, err)
	}
	if f.lookups != 1 || f.freshes != 1 {
		t.Fatalf("%d lookups and %d inventory reads, want 1 and 1", f.lookups, f.freshes)
	}
}

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}
