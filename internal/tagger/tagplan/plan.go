// Package tagplan decides which tags a pod's ENI gets: it parses the
// annotation, applies the operator's tag policy and plans the minimal
// diff. It does no I/O and reads no clock, so every decision is a table
// test.
package tagplan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// HashTag is the ENI tag carrying the ownership token.
const HashTag = "eni-tagger.io/hash"

// Hash is the ownership token for a desired tag set: a digest of its
// sorted key=value pairs. Equal sets hash equally, so pods of one
// deployment produce identical CreateTags requests that batch together.
func Hash(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%d:%s\n", len(k), k, len(tags[k]), tags[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// PlanInput is everything the tag diff depends on.
type PlanInput struct {
	// Desired are the tags the ENI should carry for the pod (after policy).
	Desired map[string]string
	// Applied are the tags the operator wrote for the pod before.
	Applied map[string]string
	// AppliedHash is the ownership token the operator wrote before.
	AppliedHash string
	// ENITags are the ENI's tags now.
	ENITags map[string]string
	// IgnoreOwnership skips the ownership check (--allow-shared-eni-tagging).
	IgnoreOwnership bool
	// Untouched are keys neither written nor removed, whatever Desired and
	// Applied say: those tag policies leave to other tools.
	Untouched []string
}

// Plan is the minimal set of writes that brings an ENI to the desired tags.
type Plan struct {
	// Create holds the tags to set (the ownership token included when it
	// has to change). Empty means no CreateTags call.
	Create map[string]string
	// Delete holds the tags to remove, each only if it still holds the
	// value the operator wrote (DeleteTags with values). Empty means no
	// DeleteTags call.
	Delete map[string]string
	// Applied and Hash are what to record once the writes succeed.
	Applied map[string]string
	Hash    string
	// Conflict, when not empty, explains why nothing may be written: the
	// ENI belongs to another owner.
	Conflict string
	// TooMany, when not nil, says the ENI would exceed AWS's tag limit.
	TooMany error
}

// Empty reports whether the plan makes no AWS call.
func (p Plan) Empty() bool { return len(p.Create) == 0 && len(p.Delete) == 0 }

// PlanTags computes the writes for one ENI. It compares with the ENI's
// real tags (not only with what was applied before), so tags changed or
// removed behind the operator's back are repaired by the same plan.
//
// The ENI's hash tag is an ownership token, not a checksum of its tags:
// removing keys does not rewrite it (that would cost a second call), and
// the token the operator last wrote stays its proof of ownership.
func PlanTags(in PlanInput) Plan {
	if conflict := ownershipConflict(in); conflict != "" {
		return Plan{Conflict: conflict}
	}
	p := Plan{Create: map[string]string{}, Delete: map[string]string{}, Applied: map[string]string{}}
	p.diffKeys(in)
	p.token(in)
	if after := tagsAfter(in.ENITags, p); after > MaxTagsPerResource {
		return Plan{TooMany: fmt.Errorf("the ENI would carry %d tags (it has %d now, counting those set by others); AWS allows %d", after, len(in.ENITags), MaxTagsPerResource)}
	}
	return p
}

// ownershipConflict says why the ENI's tags are not the pod's to change:
// its token is neither the one last applied for the pod nor that of the
// desired tags.
func ownershipConflict(in PlanInput) string {
	eniHash, want := in.ENITags[HashTag], Hash(in.Desired)
	if len(in.Desired) == 0 || in.IgnoreOwnership || eniHash == "" || eniHash == in.AppliedHash || eniHash == want {
		return ""
	}
	return fmt.Sprintf("the ENI's %s tag is %s, which is neither ours (%s) nor that of the desired tags (%q): another pod or tool owns its tags",
		HashTag, bounded.Quoted(eniHash), bounded.Quoted(in.AppliedHash), want)
}

// diffKeys plans the keys to set and to remove. Reserved keys are never
// written or removed here, whatever asks: the policy refuses them in
// annotations, and the record of what was applied may come from a pod's
// own (editable) last-applied annotation. The token is planned by token.
func (p *Plan) diffKeys(in PlanInput) {
	for k, v := range in.Desired {
		if reserved(k) || slices.Contains(in.Untouched, k) {
			continue
		}
		if cur, ok := in.ENITags[k]; !ok || cur != v {
			p.Create[k] = v
		}
		p.Applied[k] = v
	}
	for k, v := range in.Applied {
		if reserved(k) || slices.Contains(in.Untouched, k) {
			continue
		}
		if _, still := in.Desired[k]; !still && in.ENITags[k] == v {
			if _, present := in.ENITags[k]; present {
				p.Delete[k] = v
			}
		}
	}
}

// token plans the ownership token: removed with the last key, written
// with the first or with new values, kept when keys are only removed.
func (p *Plan) token(in PlanInput) {
	eniHash, want := in.ENITags[HashTag], Hash(in.Desired)
	switch {
	case len(in.Desired) == 0:
		if eniHash != "" && eniHash == in.AppliedHash {
			p.Delete[HashTag] = eniHash
		}
	case len(p.Create) > 0 || eniHash == "":
		if eniHash != want {
			p.Create[HashTag] = want
		}
		p.Hash = want
	default:
		p.Hash = eniHash
	}
}

// tagsAfter counts the ENI's tags once the plan is carried out.
func tagsAfter(eniTags map[string]string, p Plan) int {
	after := len(eniTags) - len(p.Delete)
	for k := range p.Create {
		if _, ok := eniTags[k]; !ok {
			after++
		}
	}
	return after
}
