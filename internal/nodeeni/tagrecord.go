package nodeeni

import (
	"context"
	"maps"
	"sync"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// The record of the user and policy tags the operator wrote on an ENI
// (ENINode spec.attachments[].appliedTags) is what lets it remove a tag
// the NodeENI no longer gives without ever removing one it did not write.

// tagChange is what one ENI's user tags need: the tags to set, the tags
// to remove (with the values they must still hold) and the record once
// both are done.
type tagChange struct {
	set, remove, record map[string]string
}

// tagChanges decides, from an ENI's tags (have), the tags the NodeENI
// gives its node (want) and the record of what the operator wrote there:
//   - a wanted tag missing or with another value is set, and recorded;
//   - a recorded tag no longer wanted is removed only while it holds the
//     recorded value: one rewritten since is someone else's now;
//   - a wanted tag the ENI already carries with the wanted value stays
//     recorded if it was, and is not recorded if it was not: it may be
//     someone else's (an adopted ENI's, or one tagged by other tooling
//     before this version kept a record), so it is never removed.
//
// Reserved keys are never set, removed or recorded.
func tagChanges(have, want, recorded map[string]string) tagChange {
	c := tagChange{set: userTagDiff(have, want)}
	for k, v := range want {
		if !userTag(k, v) {
			continue
		}
		if _, setting := c.set[k]; setting || (recorded[k] == v && have[k] == v) {
			c.record = put(c.record, k, v)
		}
	}
	for k, v := range recorded {
		if wv, wanted := want[k]; (wanted && userTag(k, wv)) || !userTag(k, v) {
			continue
		}
		if cur, ok := have[k]; ok && cur == v {
			c.remove = put(c.remove, k, v)
		}
	}
	return c
}

// heldRecord is the part of a record the ENI still carries with the
// recorded values: what is still the operator's, whatever was done since.
// Of the tags just written (at creation, at adoption), it is the record
// to start with.
func heldRecord(have, recorded map[string]string) map[string]string {
	var out map[string]string
	for k, v := range recorded {
		if cur, ok := have[k]; ok && cur == v && userTag(k, v) {
			out = put(out, k, v)
		}
	}
	return out
}

func put(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// tagsFor are the tags of a node's interfaces.
func (in planInput) tagsFor(node string) map[string]string {
	if t, ok := in.NodeTags[node]; ok {
		return t
	}
	return in.Tags
}

// tagDrift is the tag step of a kept ENI, if any. Before the tag
// policies are loaded the wanted tags are not known: nothing changes (a
// policy's tags would be taken off and put back). Where a policy fails
// for the node, the spec's are set, and the recorded tags still held
// count as wanted: nothing is removed on a guess.
func tagDrift(in planInput, o owned) []action {
	if in.HoldTags {
		return nil
	}
	want, recorded := in.tagsFor(o.Node), in.Recorded[o.ID]
	if in.HoldTagsOn[o.Node] {
		held := heldRecord(o.Tags, recorded)
		want = maps.Clone(want)
		for k, v := range held {
			if _, ok := want[k]; !ok {
				want = put(want, k, v)
			}
		}
	}
	c := tagChanges(o.Tags, want, recorded)
	if len(c.set) == 0 && len(c.remove) == 0 {
		return nil
	}
	return []action{{Kind: actSetTags, Node: o.Node, ENI: o.ID, Tags: c.set, Remove: c.remove, Record: c.record}}
}

// retag sets and removes an ENI's user tags, then records the outcome.
// EC2 first, the record after: a crash or a failed write in between
// leaves a tag written but unrecorded (kept for good), or a removed tag
// still recorded (not on the ENI any more, so dropped from the record),
// never a record of a tag the operator did not write.
func (r *reconciler) retag(ctx context.Context, a action) (string, error) {
	if err := r.ec2.CreateTags(ctx, a.ENI, a.Tags); err != nil {
		return "tagging " + a.ENI, err
	}
	if err := r.ec2.DeleteTags(ctx, a.ENI, a.Remove); err != nil {
		// Not removed: still the operator's.
		rec := maps.Clone(a.Record)
		if rec == nil {
			rec = map[string]string{}
		}
		maps.Copy(rec, a.Remove)
		r.applied.set(a.ENI, rec)
		return "removing tags from " + a.ENI, err
	}
	r.applied.set(a.ENI, a.Record)
	return "", nil
}

// appliedTags holds the records this process wrote EC2 for but may not
// see in the ENINodes yet (the write after the EC2 call failed, or the
// cache is behind): they stand in for the ENINode's until it agrees.
type appliedTags struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func newAppliedTags() *appliedTags { return &appliedTags{m: map[string]map[string]string{}} }

func (t *appliedTags) set(eni string, rec map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[eni] = maps.Clone(rec)
}

func (t *appliedTags) forget(eni string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, eni)
}

// records are the NodeENI's records of its ENIs: each ENINode's (read
// from spec.attachments of the ENI's own node only) or, where this
// process wrote one the ENINode does not show yet, that one. A record
// the ENINode shows (as far as the ENI still carries it) is no longer
// held here.
func (t *appliedTags) records(nodeENI string, held map[string]*v1alpha1.ENINode, enis []owned) map[string]map[string]string {
	out := map[string]map[string]string{}
	for node, en := range held {
		for _, a := range shareOf(en, nodeENI) {
			if a.NodeID == node && len(a.AppliedTags) > 0 {
				out[a.ENIID] = a.AppliedTags
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range enis {
		mine, ok := t.m[o.ID]
		switch {
		case !ok:
		case maps.Equal(heldRecord(o.Tags, mine), out[o.ID]):
			delete(t.m, o.ID)
		default:
			out[o.ID] = mine
		}
	}
	return out
}

// overlay puts the records this process holds over in's, after actions.
func (t *appliedTags) overlay(in *planInput) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := maps.Clone(in.Recorded)
	if out == nil {
		out = map[string]map[string]string{}
	}
	for _, o := range in.ENIs {
		if mine, ok := t.m[o.ID]; ok {
			out[o.ID] = mine
		}
	}
	in.Recorded = out
}
