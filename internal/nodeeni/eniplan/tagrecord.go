package eniplan

import (
	"maps"
)

// The record of the user and policy tags the operator wrote on an ENI
// (ENINode spec.attachments[].appliedTags) is what lets it remove a tag
// the NodeENI no longer gives without ever removing one it did not write.

// tagChange is what one ENI's user tags need: the tags to set, the tags
// to remove (with the values they must still hold) and the record once
// both are done.
type tagChange struct {
	Set, Remove, Record map[string]string
}

// TagChanges decides, from an ENI's tags (have), the tags the NodeENI
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
func TagChanges(have, want, recorded map[string]string) tagChange {
	c := tagChange{Set: userTagDiff(have, want)}
	for k, v := range want {
		if !userTag(k, v) {
			continue
		}
		if _, setting := c.Set[k]; setting || (recorded[k] == v && have[k] == v) {
			c.Record = put(c.Record, k, v)
		}
	}
	for k, v := range recorded {
		if wv, wanted := want[k]; (wanted && userTag(k, wv)) || !userTag(k, v) {
			continue
		}
		if cur, ok := have[k]; ok && cur == v {
			c.Remove = put(c.Remove, k, v)
		}
	}
	return c
}

// HeldRecord is the part of a record the ENI still carries with the
// recorded values: what is still the operator's, whatever was done since.
// Of the tags just written (at creation, at adoption), it is the record
// to start with.
func HeldRecord(have, recorded map[string]string) map[string]string {
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
func (in PlanInput) tagsFor(node string) map[string]string {
	if t, ok := in.NodeTags[node]; ok {
		return t
	}
	return in.Tags
}

// TagDrift is the tag step of a kept ENI, if any. Before the tag
// policies are loaded the wanted tags are not known: nothing changes (a
// policy's tags would be taken off and put back). Where a policy fails
// for the node, the spec's are set, and the recorded tags still held
// count as wanted: nothing is removed on a guess.
func TagDrift(in PlanInput, o Owned) []Action {
	if in.HoldTags {
		return nil
	}
	want, recorded := in.tagsFor(o.Node), in.Recorded[o.ID]
	if in.HoldTagsOn[o.Node] {
		held := HeldRecord(o.Tags, recorded)
		want = maps.Clone(want)
		for k, v := range held {
			if _, ok := want[k]; !ok {
				want = put(want, k, v)
			}
		}
	}
	c := TagChanges(o.Tags, want, recorded)
	if len(c.Set) == 0 && len(c.Remove) == 0 {
		return nil
	}
	return []Action{{Kind: ActSetTags, Node: o.Node, ENI: o.ID, Tags: c.Set, Remove: c.Remove, Record: c.Record}}
}
