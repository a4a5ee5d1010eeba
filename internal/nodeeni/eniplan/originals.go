package eniplan

import (
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// LegacyRecords are the entries of the deprecated status.attachments
// still needed as evidence: those of ENIs whose adoption or proof is yet
// to be written (EC2 refused, or dry-run). The others are dropped: their
// ENIs are the operator's own and in the ENINodes.
func LegacyRecords(records []v1alpha1.ENIAttachment, waiting ...[]Action) []v1alpha1.ENIAttachment {
	ids := map[string]bool{}
	for _, acts := range waiting {
		for _, a := range acts {
			ids[a.ENI] = true
		}
	}
	var out []v1alpha1.ENIAttachment
	for _, rec := range records {
		if ids[rec.ENIID] {
			rec.AppliedTags, rec.Selection = nil, nil // records count only in the ENINode, which only the operator writes
			out = append(out, rec)
		}
	}
	return out
}

// Unswitched adds to kept the records an eni-agent of an earlier version
// may still configure its node from: the ENI is still the NodeENI's and
// no agent has reported in its node's ENINode yet. An upgraded operator
// that dropped them at once would have every node agent not yet upgraded
// release its interfaces (names, DPDK bindings); they go once the node's
// agent reports in its ENINode, and were bounded by what the earlier
// version wrote.
func Unswitched(kept, records []v1alpha1.ENIAttachment, ours []Owned, held map[string]*v1alpha1.ENINode) []v1alpha1.ENIAttachment {
	for _, rec := range records {
		switch {
		case slices.ContainsFunc(kept, func(k v1alpha1.ENIAttachment) bool { return k.ENIID == rec.ENIID }):
		case !slices.ContainsFunc(ours, func(o Owned) bool { return o.ID == rec.ENIID }):
		case held[rec.NodeID] != nil && len(held[rec.NodeID].Status.Interfaces) > 0:
		default:
			kept = append(kept, rec)
		}
	}
	return kept
}

// NotAdopted are the adoptions whose ENI is not among the NodeENI's own
// after they were carried out.
func NotAdopted(adopt []Action, after []Owned) []Action {
	return slices.DeleteFunc(slices.Clone(adopt), func(a Action) bool {
		return slices.ContainsFunc(after, func(o Owned) bool { return o.ID == a.ENI })
	})
}
