package eniplan

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

func NodeENIsNamed(en *v1alpha1.ENINode) []string {
	var out []string
	for _, a := range en.Spec.Attachments {
		out = append(out, a.NodeENI)
	}
	for _, c := range en.Spec.Creates {
		out = append(out, c.NodeENI)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ShareOf is the entries of an ENINode that name the NodeENI.
func ShareOf(en *v1alpha1.ENINode, nodeENI string) []v1alpha1.ENIAttachment {
	if en == nil {
		return nil
	}
	var out []v1alpha1.ENIAttachment
	for _, a := range en.Spec.Attachments {
		if a.NodeENI == nodeENI {
			out = append(out, a)
		}
	}
	return out
}

// WithShare returns the entries with the NodeENI's share replaced by
// share, sorted by NodeENI, device index and ENI.
func WithShare(entries []v1alpha1.ENIAttachment, nodeENI string, share []v1alpha1.ENIAttachment) []v1alpha1.ENIAttachment {
	out := slices.DeleteFunc(slices.Clone(entries), func(a v1alpha1.ENIAttachment) bool { return a.NodeENI == nodeENI })
	out = append(out, share...)
	slices.SortStableFunc(out, func(a, b v1alpha1.ENIAttachment) int {
		return cmp.Or(strings.Compare(a.NodeENI, b.NodeENI), cmp.Compare(a.DeviceIndex, b.DeviceIndex), strings.Compare(a.ENIID, b.ENIID))
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// SameShare compares two shares, order aside.
func SameShare(a, b []v1alpha1.ENIAttachment) bool {
	return equality.Semantic.DeepEqual(SortedShare(a), SortedShare(b))
}

func SortedShare(s []v1alpha1.ENIAttachment) []v1alpha1.ENIAttachment {
	if len(s) == 0 {
		return nil
	}
	return slices.SortedFunc(slices.Values(s), func(a, b v1alpha1.ENIAttachment) int { return strings.Compare(a.ENIID, b.ENIID) })
}

// SharesByNode splits planned entries by node, each naming the NodeENI,
// their messages within what the API takes.
func SharesByNode(nodeENI string, planned []v1alpha1.ENIAttachment) map[string][]v1alpha1.ENIAttachment {
	out := map[string][]v1alpha1.ENIAttachment{}
	for _, a := range planned {
		a.NodeENI = nodeENI
		a.Message = bounded.Truncate(a.Message, bounded.Message)
		out[a.NodeID] = append(out[a.NodeID], a)
	}
	return out
}

// PlannedShares are a NodeENI's planned entries on every node and what
// becomes of its records of creates (updateCreates).
type PlannedShares struct {
	Entries []v1alpha1.ENIAttachment
	Update  func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)
}

// ShareWrite is one node's share to write, stamped at now.
type ShareWrite struct {
	Node    string
	Entries []v1alpha1.ENIAttachment
	Now     metav1.Time
	// Creates, when set, are records to add to spec.creates; the entries
	// are then left as they are.
	Creates []v1alpha1.CreateRecord
	// Update, when set, decides what becomes of the NodeENI's records of
	// creates: each kept (perhaps bound) or dropped.
	Update func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)
}

// UpdatedCreates returns a node's spec.creates with the NodeENI's records
// updated, and the nonces dropped.
func UpdatedCreates(all []v1alpha1.CreateRecord, nodeENI string, update func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)) ([]v1alpha1.CreateRecord, []string) {
	if update == nil {
		return all, nil
	}
	var out []v1alpha1.CreateRecord
	var dropped []string
	for _, c := range all {
		if c.NodeENI == nodeENI {
			var keep bool
			if c, keep = update(c); !keep {
				dropped = append(dropped, c.Nonce)
				continue
			}
		}
		out = append(out, c)
	}
	return out, dropped
}

// ReportsOf are the agents' reports in the ENINodes, by node and ENI: a
// report counts only for an ENI of its own node.
func ReportsOf(held map[string]*v1alpha1.ENINode) map[ReportKey]v1alpha1.InterfaceStatus {
	out := map[ReportKey]v1alpha1.InterfaceStatus{}
	for node, en := range held {
		for _, s := range en.Status.Interfaces {
			out[ReportKey{Node: node, ENI: s.ENIID}] = s
		}
	}
	return out
}

// ReportKey names an agent's report: its node and the ENI.
type ReportKey struct{ Node, ENI string }

func ShareKey(nodeENI, node string) string { return nodeENI + "/" + node }
