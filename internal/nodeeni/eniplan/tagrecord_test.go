package eniplan

import (
	"maps"
	"testing"
)

type tags = map[string]string

// The decision of an ENI's user tags: what to set, what to remove (with
// the value it must still hold) and the record once both are done.
func TestTagChanges(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		have, want, recorded    tags
		set, remove, wantRecord tags
	}{
		{name: "in sync: nothing to do, the record stays",
			have: tags{"Team": "a", "Env": "prod"}, want: tags{"Team": "a", "Env": "prod"}, recorded: tags{"Team": "a", "Env": "prod"},
			wantRecord: tags{"Team": "a", "Env": "prod"}},
		{name: "a new key is set and recorded",
			have: tags{"Team": "a"}, want: tags{"Team": "a", "Env": "prod"}, recorded: tags{"Team": "a"},
			set: tags{"Env": "prod"}, wantRecord: tags{"Team": "a", "Env": "prod"}},
		{name: "a changed value is set and recorded",
			have: tags{"Team": "a"}, want: tags{"Team": "b"}, recorded: tags{"Team": "a"},
			set: tags{"Team": "b"}, wantRecord: tags{"Team": "b"}},
		{name: "a key dropped from the spec is removed with its recorded value",
			have: tags{"Team": "a", "Env": "prod"}, want: tags{"Team": "a"}, recorded: tags{"Team": "a", "Env": "prod"},
			remove: tags{"Env": "prod"}, wantRecord: tags{"Team": "a"}},
		{name: "a dropped key someone rewrote is theirs: kept, no longer recorded",
			have: tags{"Env": "staging"}, want: nil, recorded: tags{"Env": "prod"}},
		{name: "a dropped key someone already removed: nothing to do",
			have: nil, want: nil, recorded: tags{"Env": "prod"}},
		{name: "no record (an ENI of an earlier version): nothing removed, a tag already right is not claimed",
			have: tags{"Team": "a", "Env": "prod", "Backup": "daily"}, want: tags{"Team": "a"}},
		{name: "no record: a tag the operator writes now starts the record",
			have: tags{"Team": "a", "Backup": "daily"}, want: tags{"Team": "a", "Env": "prod"},
			set: tags{"Env": "prod"}, wantRecord: tags{"Env": "prod"}},
		{name: "a wanted tag someone rewrote is set back and recorded",
			have: tags{"Team": "x"}, want: tags{"Team": "a"}, recorded: tags{"Team": "a"},
			set: tags{"Team": "a"}, wantRecord: tags{"Team": "a"}},
		{name: "a new value someone else already wrote is theirs: not recorded",
			have: tags{"Team": "b"}, want: tags{"Team": "b"}, recorded: tags{"Team": "a"}},
		{name: "reserved keys are never set, removed or recorded",
			have:     tags{"eni-operator.io/node": "n1", "kubernetes.io/cluster/x": "owned"},
			want:     tags{"kubernetes.io/cluster/x": "shared"},
			recorded: tags{"eni-operator.io/node": "n1", "kubernetes.io/cluster/x": "owned"}},
		{name: "a recorded tag outside the character rule is never removed",
			have: tags{"bell\a": "v"}, recorded: tags{"bell\a": "v"}},
		{name: "set and remove at once",
			have: tags{"Old": "1", "Keep": "k"}, want: tags{"New": "2", "Keep": "k"}, recorded: tags{"Old": "1", "Keep": "k"},
			set: tags{"New": "2"}, remove: tags{"Old": "1"}, wantRecord: tags{"New": "2", "Keep": "k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TagChanges(tc.have, tc.want, tc.recorded)
			for _, c := range []struct {
				what      string
				got, want tags
			}{{"set", got.Set, tc.set}, {"remove", got.Remove, tc.remove}, {"record", got.Record, tc.wantRecord}} {
				if !maps.Equal(c.got, c.want) {
					t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
				}
			}
			// Once done, the next pass has nothing to do and keeps the record.
			after := maps.Clone(tc.have)
			if after == nil {
				after = tags{}
			}
			maps.Copy(after, got.Set)
			for k := range got.Remove {
				delete(after, k)
			}
			again := TagChanges(after, tc.want, got.Record)
			if len(again.Set) > 0 || len(again.Remove) > 0 || !maps.Equal(again.Record, got.Record) {
				t.Errorf("not a fixed point: %+v after %+v", again, got)
			}
		})
	}
}

// Before the tag policies are loaded no tag changes; where a policy
// fails for the node, recorded tags the ENI still holds are kept and the
// spec's are set as usual.
func TestTagDriftHolds(t *testing.T) {
	o := Owned{Node: "n1"}
	o.ID, o.Tags = "eni-1", tags{"Team": "a", "Zone": "us-east-1a"}
	in := PlanInput{Tags: tags{"Team": "a", "Env": "prod"}, Recorded: map[string]tags{"eni-1": {"Team": "a", "Zone": "us-east-1a"}}}
	in.HoldTags = true
	if acts := TagDrift(in, o); len(acts) != 0 {
		t.Errorf("policies not loaded: %+v", acts)
	}
	in.HoldTags, in.HoldTagsOn = false, map[string]bool{"n1": true}
	acts := TagDrift(in, o)
	if len(acts) != 1 || len(acts[0].Remove) > 0 || !maps.Equal(acts[0].Tags, tags{"Env": "prod"}) ||
		!maps.Equal(acts[0].Record, tags{"Team": "a", "Zone": "us-east-1a", "Env": "prod"}) {
		t.Errorf("held on the node: %+v", acts)
	}
	in.HoldTagsOn = nil
	if acts := TagDrift(in, o); len(acts) != 1 || !maps.Equal(acts[0].Remove, tags{"Zone": "us-east-1a"}) {
		t.Errorf("not held: %+v", acts)
	}
}

// The record an entry carries is what the ENI still holds of it.
func TestHeldRecord(t *testing.T) {
	got := HeldRecord(tags{"A": "1", "B": "other"}, tags{"A": "1", "B": "2", "C": "3"})
	if !maps.Equal(got, tags{"A": "1"}) {
		t.Errorf("heldRecord: %v", got)
	}
	if HeldRecord(tags{"A": "1"}, nil) != nil {
		t.Error("no record must stay nil (the entry of an earlier version is unchanged)")
	}
}
