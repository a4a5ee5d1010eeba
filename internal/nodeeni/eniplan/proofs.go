package eniplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// LegacyStatus is what the deprecated status.attachments may still vouch
// for. It serves the upgrade from versions that wrote it: once this
// version wrote the NodeENI (an ENINode holds an entry of its own, which
// only the operator writes), anyone allowed to patch the status could
// otherwise name any ENI, so it then counts only for the ENIs the
// operator itself already carried into the ENINodes (their proof or
// adoption still to be written).
type LegacyStatus struct {
	// Records are the NodeENI's status.attachments.
	Records []v1alpha1.ENIAttachment
	// Written: some ENINode holds an entry of the NodeENI; Carried are
	// the ENIs those entries name.
	Written bool
	Carried map[string]bool
	// Subnets are the NodeENI's subnets as the spec resolves them (never
	// status.subnets, which the status's writer sets too).
	Subnets map[string]bool
}

// LegacyOf gathers a NodeENI's LegacyStatus from its status, its ENINodes
// and its resolved subnets.
func LegacyOf(ne *v1alpha1.NodeENI, held map[string]*v1alpha1.ENINode, subnets []SubnetInfo) LegacyStatus {
	l := LegacyStatus{Records: ne.Status.Attachments, Carried: map[string]bool{}, Subnets: map[string]bool{}}
	for _, en := range held {
		for _, a := range ShareOf(en, ne.Name) {
			l.Written, l.Carried[a.ENIID] = true, true
		}
	}
	for _, s := range subnets {
		l.Subnets[s.ID] = true
	}
	return l
}

// Counted are the entries that still count as evidence: all of them
// before this version wrote the NodeENI, then those of ENIs it carried.
// Each use checks the ENI itself further (vouched, NotAdoptable).
func (l LegacyStatus) Counted() []v1alpha1.ENIAttachment {
	var out []v1alpha1.ENIAttachment
	for _, a := range l.Records {
		if !l.Written || l.Carried[a.ENIID] {
			out = append(out, a)
		}
	}
	return out
}

// Vouched reports whether an ENI that passed every check but the proof,
// because it has none, is the operator's all the same: a counted status
// entry names it where EC2 shows it — in that subnet, attached to the
// instance of the node the entry and its tags name, at the index its tags
// (and the entry) name. It covers ENIs of versions before proofs: each
// gains its proof once.
func Vouched(e awstypes.ENI, l LegacyStatus) bool {
	at := e.Attachment
	if !l.Subnets[e.SubnetID] || at == nil || at.InstanceID != e.Tags[TagInstance] || at.DeviceIndex != intTag(e.Tags, TagDeviceIndex) {
		return false
	}
	for _, a := range l.Counted() {
		if a.ENIID == e.ID && (a.SubnetID == "" || a.SubnetID == e.SubnetID) && a.NodeID == e.Tags[TagNode] && a.InstanceID == at.InstanceID &&
			(a.DeviceIndex == 0 || int(a.DeviceIndex) == at.DeviceIndex) {
			return true
		}
	}
	return false
}

// ProofRestored marks a prove action that restores the proof of an ENI an
// ENINode entry vouches for.
const ProofRestored = "ProofRestored"

// Reasons of the OwnershipVerified condition.
const (
	ReasonVerified     = "Verified"
	ReasonUntrusted    = "UntrustedENIs"
	ReasonProofRestore = ProofRestored
)

// OwnershipCondition says whether every ENI carrying the NodeENI's
// ownership tags is proven its own: the ENIs left alone by reason, or the
// proofs being restored, with what to do.
func OwnershipCondition(distrusted map[string]string, prove []Action, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionOwnershipVerified, Status: metav1.ConditionTrue, Reason: ReasonVerified,
		Message: "every ENI carrying this NodeENI's ownership tags is proven the operator's", ObservedGeneration: generation}
	var restoring []string
	for _, a := range prove {
		if a.Reason == ProofRestored {
			restoring = append(restoring, a.ENI)
		}
	}
	const recovery = "if the ownership key Secret was lost or replaced, restore its old keys (docs/operations.md#ownership-keys)"
	if len(distrusted) > 0 {
		byReason := map[string][]string{}
		for id, reason := range distrusted {
			byReason[reason] = append(byReason[reason], id)
		}
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(byReason)) {
			ids := byReason[reason]
			slices.Sort(ids)
			parts = append(parts, fmt.Sprintf("%s: %s", reason, bounded.List(ids, ", ", bounded.Items)))
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonUntrusted
		c.Message = bounded.Truncate(fmt.Sprintf("%d ENIs carry this NodeENI's ownership tags but fail the trust check and are left alone (%s); remove the tags from ENIs that are not the operator's; %s",
			len(distrusted), strings.Join(parts, "; "), recovery), bounded.Message)
		return c
	}
	if len(restoring) > 0 {
		slices.Sort(restoring)
		c.Status, c.Reason = metav1.ConditionFalse, ReasonProofRestore
		c.Message = bounded.Truncate(fmt.Sprintf("restoring the ownership proofs of %d ENIs their ENINode entries vouch for (%s): the proof tag was removed or signed with a key not in the key ring; %s",
			len(restoring), bounded.List(restoring, ", ", bounded.Items), recovery), bounded.Message)
	}
	return c
}

// Proving returns the actions that sign the NodeENI's ENIs needing it:
// the vouched-for unproven ones (which join the trusted list), those an
// ENINode entry vouches for whose proof is gone or does not verify
// (restored), and those proven with a key other than the ring's current
// one (rotation). Each is signed with a v1 proof: its ID is known now.
func Proving(keys *ownership.KeyRing, l LegacyStatus, trusted []Owned, all []Owned, v Verdicts) ([]Owned, []Action) {
	var acts []Action
	for _, o := range all {
		if v.Reasons[o.ID] != UntrustedUnproven || !Vouched(o.ENI, l) {
			continue
		}
		trusted = append(trusted, o)
		acts = append(acts, proveAction(keys, o, false))
	}
	for _, o := range trusted {
		if v.Restore[o.ID] {
			acts = append(acts, proveAction(keys, o, true))
		} else if key, ok := v.SignedBy[o.ID]; ok && key != keys.Current() {
			acts = append(acts, proveAction(keys, o, false))
		}
	}
	return trusted, acts
}

func proveAction(keys *ownership.KeyRing, o Owned, restore bool) Action {
	a := Action{Kind: ActProve, Node: o.Node, ENI: o.ID, Tags: ProofTag(keys, awstypes.ENI{ID: o.ID, Tags: o.Tags})}
	if restore {
		a.Reason = ProofRestored
	}
	return a
}
