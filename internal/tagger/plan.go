package tagger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Hash is the ownership token for a desired tag set: a digest of its
// sorted key=value pairs. Equal sets hash equally, so pods of one
// deployment produce identical CreateTags requests that batch together.
func Hash(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
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
	eniHash := in.ENITags[HashTag]
	want := Hash(in.Desired)
	if len(in.Desired) > 0 && !in.IgnoreOwnership && eniHash != "" && eniHash != in.AppliedHash && eniHash != want {
		return Plan{Conflict: fmt.Sprintf("the ENI's %s tag is %s, which is neither ours (%s) nor that of the desired tags (%q): another pod or tool owns its tags",
			HashTag, bounded.Quoted(eniHash), bounded.Quoted(in.AppliedHash), want)}
	}
	p := Plan{Create: map[string]string{}, Delete: map[string]string{}, Applied: map[string]string{}}
	// Reserved keys are never written or removed here, whatever asks:
	// the policy refuses them in annotations, and the record of what was
	// applied may come from a pod's own (editable) last-applied
	// annotation. The token is handled on its own below.
	for k, v := range in.Desired {
		if reserved(k) {
			continue
		}
		if cur, ok := in.ENITags[k]; !ok || cur != v {
			p.Create[k] = v
		}
		p.Applied[k] = v
	}
	for k, v := range in.Applied {
		if reserved(k) {
			continue
		}
		if _, still := in.Desired[k]; !still && in.ENITags[k] == v {
			if _, present := in.ENITags[k]; present {
				p.Delete[k] = v
			}
		}
	}
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
	after := len(in.ENITags) - len(p.Delete)
	for k := range p.Create {
		if _, ok := in.ENITags[k]; !ok {
			after++
		}
	}
	if after > MaxTagsPerResource {
		return Plan{TooMany: fmt.Errorf("the ENI would carry %d tags (it has %d now, counting those set by others); AWS allows %d", after, len(in.ENITags), MaxTagsPerResource)}
	}
	return p
}
