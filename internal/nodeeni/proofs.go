package nodeeni

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/internal/awstypes"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// legacyStatus is what the deprecated status.attachments may still vouch
// for. It serves the upgrade from versions that wrote it: once this
// version wrote the NodeENI (an ENINode holds an entry of its own, which
// only the operator writes), anyone allowed to patch the status could
// otherwise name any ENI, so it then counts only for the ENIs the
// operator itself already carried into the ENINodes (their proof or
// adoption still to be written).
type legacyStatus struct {
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

// legacyOf gathers a NodeENI's legacyStatus from its status, its ENINodes
// and its resolved subnets.
func legacyOf(ne *v1alpha1.NodeENI, held map[string]*v1alpha1.ENINode, subnets []subnetInfo) legacyStatus {
	l := legacyStatus{Records: ne.Status.Attachments, Carried: map[string]bool{}, Subnets: map[string]bool{}}
	for _, en := range held {
		for _, a := range shareOf(en, ne.Name) {
			l.Written, l.Carried[a.ENIID] = true, true
		}
	}
	for _, s := range subnets {
		l.Subnets[s.ID] = true
	}
	return l
}

// counted are the entries that still count as evidence: all of them
// before this version wrote the NodeENI, then those of ENIs it carried.
// Each use checks the ENI itself further (vouched, notAdoptable).
func (l legacyStatus) counted() []v1alpha1.ENIAttachment {
	var out []v1alpha1.ENIAttachment
	for _, a := range l.Records {
		if !l.Written || l.Carried[a.ENIID] {
			out = append(out, a)
		}
	}
	return out
}

// vouched reports whether an ENI that passed every check but the proof,
// because it has none, is the operator's all the same: a counted status
// entry names it where EC2 shows it — in that subnet, attached to the
// instance of the node the entry and its tags name, at the index its tags
// (and the entry) name. It covers ENIs of versions before proofs: each
// gains its proof once.
func vouched(e awstypes.ENI, l legacyStatus) bool {
	at := e.Attachment
	if !l.Subnets[e.SubnetID] || at == nil || at.InstanceID != e.Tags[TagInstance] || at.DeviceIndex != intTag(e.Tags, TagDeviceIndex) {
		return false
	}
	for _, a := range l.counted() {
		if a.ENIID == e.ID && (a.SubnetID == "" || a.SubnetID == e.SubnetID) && a.NodeID == e.Tags[TagNode] && a.InstanceID == at.InstanceID &&
			(a.DeviceIndex == 0 || int(a.DeviceIndex) == at.DeviceIndex) {
			return true
		}
	}
	return false
}

// proving returns the actions that sign the NodeENI's ENIs needing it:
// the vouched-for unproven ones (which join the trusted list), those an
// ENINode entry vouches for whose proof is gone or does not verify
// (restored), and those proven with a key other than the ring's current
// one (rotation). Each is signed with a v1 proof: its ID is known now.
func (r *reconciler) proving(l legacyStatus, trusted []owned, all []owned, v verdicts) ([]owned, []action) {
	var acts []action
	for _, o := range all {
		if v.reasons[o.ID] != UntrustedUnproven || !vouched(o.ENI, l) {
			continue
		}
		trusted = append(trusted, o)
		acts = append(acts, r.proveAction(o, false))
	}
	for _, o := range trusted {
		if v.restore[o.ID] {
			acts = append(acts, r.proveAction(o, true))
		} else if key, ok := v.signedBy[o.ID]; ok && key != r.trust.keys.Current() {
			acts = append(acts, r.proveAction(o, false))
		}
	}
	return trusted, acts
}

func (r *reconciler) proveAction(o owned, restore bool) action {
	a := action{Kind: actProve, Node: o.Node, ENI: o.ID, Tags: ProofTag(r.trust.keys, awstypes.ENI{ID: o.ID, Tags: o.Tags})}
	if restore {
		a.Reason = proofRestored
	}
	return a
}

// proofRestored marks a prove action that restores the proof of an ENI an
// ENINode entry vouches for.
const proofRestored = "ProofRestored"

// prove signs an ENI of an earlier version, re-signs one with the current
// key, or restores the proof of one its ENINode entry vouches for, and
// says so: a restore loudly, since a proof removed or of a key no longer
// in the ring means the tag or the key Secret was tampered with or lost.
func (r *reconciler) prove(ctx context.Context, a action, ev *nodeEvents) (*blocked, error) {
	err := r.ec2.CreateTagsAlone(ctx, a.ENI, a.Tags)
	r.metrics.op(actProve, err)
	if ec2.IsNotFound(err) {
		return nil, nil // EC2 does not show the ENI yet: signed on the next pass
	} else if err != nil {
		return r.failed(ev, a, "writing the ownership proof of "+a.ENI, err)
	}
	key := r.trust.keys.Current()
	if a.Reason == proofRestored {
		r.metrics.restored.Inc()
		log.FromContext(ctx).Error(nil, "restored the ownership proof of an ENI its ENINode entry vouches for: its proof tag was removed, or signed with a key no longer in the key ring; if the key Secret was lost or replaced, restore the old keys (docs/operations.md#ownership-keys)",
			"node", a.Node, "eni", a.ENI, "key", key)
		ev.add(corev1.EventTypeWarning, proofRestored, "Prove", fmt.Sprintf("ENI %s of node %s had no valid ownership proof (tag removed, or its key is not in the key ring); its ENINode entry vouches for it, so it is signed again with key %s. If the key Secret was lost or replaced, restore the old keys: docs/operations.md#ownership-keys", a.ENI, a.Node, key))
		return nil, nil
	}
	log.FromContext(ctx).Info("signed ENI's ownership proof", "node", a.Node, "eni", a.ENI, "key", key)
	ev.add(corev1.EventTypeNormal, "Signed", "Prove", fmt.Sprintf("ENI %s of node %s carries its ownership proof (key %s)", a.ENI, a.Node, key))
	return nil, nil
}

// Reasons of the OwnershipVerified condition.
const (
	ReasonVerified     = "Verified"
	ReasonUntrusted    = "UntrustedENIs"
	ReasonProofRestore = proofRestored
)

// ownershipCondition says whether every ENI carrying the NodeENI's
// ownership tags is proven its own: the ENIs left alone by reason, or the
// proofs being restored, with what to do.
func ownershipCondition(distrusted map[string]string, prove []action, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionOwnershipVerified, Status: metav1.ConditionTrue, Reason: ReasonVerified,
		Message: "every ENI carrying this NodeENI's ownership tags is proven the operator's", ObservedGeneration: generation}
	var restoring []string
	for _, a := range prove {
		if a.Reason == proofRestored {
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
