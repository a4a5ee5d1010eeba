package nodeeni

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// proving returns the actions that sign the NodeENI's ENIs needing it:
// the vouched-for unproven ones (which join the trusted list), those an
// ENINode entry vouches for whose proof is gone or does not verify
// (restored), and those proven with a key other than the ring's current
// one (rotation). Each is signed with a v1 proof: its ID is known now.
func (r *reconciler) proving(l eniplan.LegacyStatus, trusted []eniplan.Owned, all []eniplan.Owned, v eniplan.Verdicts) ([]eniplan.Owned, []eniplan.Action) {
	var acts []eniplan.Action
	for _, o := range all {
		if v.Reasons[o.ID] != eniplan.UntrustedUnproven || !eniplan.Vouched(o.ENI, l) {
			continue
		}
		trusted = append(trusted, o)
		acts = append(acts, r.proveAction(o, false))
	}
	for _, o := range trusted {
		if v.Restore[o.ID] {
			acts = append(acts, r.proveAction(o, true))
		} else if key, ok := v.SignedBy[o.ID]; ok && key != r.trust.Keys.Current() {
			acts = append(acts, r.proveAction(o, false))
		}
	}
	return trusted, acts
}

func (r *reconciler) proveAction(o eniplan.Owned, restore bool) eniplan.Action {
	a := eniplan.Action{Kind: eniplan.ActProve, Node: o.Node, ENI: o.ID, Tags: eniplan.ProofTag(r.trust.Keys, awstypes.ENI{ID: o.ID, Tags: o.Tags})}
	if restore {
		a.Reason = eniplan.ProofRestored
	}
	return a
}

// prove signs an ENI of an earlier version, re-signs one with the current
// key, or restores the proof of one its ENINode entry vouches for, and
// says so: a restore loudly, since a proof removed or of a key no longer
// in the ring means the tag or the key Secret was tampered with or lost.
func (r *reconciler) prove(ctx context.Context, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	err := r.ec2.CreateTagsAlone(ctx, a.ENI, a.Tags)
	r.metrics.op(eniplan.ActProve, err)
	if ec2.IsNotFound(err) {
		return nil, nil // EC2 does not show the ENI yet: signed on the next pass
	} else if err != nil {
		return r.failed(ev, a, "writing the ownership proof of "+a.ENI, err)
	}
	key := r.trust.Keys.Current()
	if a.Reason == eniplan.ProofRestored {
		r.metrics.restored.Inc()
		log.FromContext(ctx).Error(nil, "restored the ownership proof of an ENI its ENINode entry vouches for: its proof tag was removed, or signed with a key no longer in the key ring; if the key Secret was lost or replaced, restore the old keys (docs/operations.md#ownership-keys)",
			"node", a.Node, "eni", a.ENI, "key", key)
		ev.add(corev1.EventTypeWarning, eniplan.ProofRestored, "Prove", fmt.Sprintf("ENI %s of node %s had no valid ownership proof (tag removed, or its key is not in the key ring); its ENINode entry vouches for it, so it is signed again with key %s. If the key Secret was lost or replaced, restore the old keys: docs/operations.md#ownership-keys", a.ENI, a.Node, key))
		return nil, nil
	}
	log.FromContext(ctx).Info("signed ENI's ownership proof", "node", a.Node, "eni", a.ENI, "key", key)
	ev.add(corev1.EventTypeNormal, "Signed", "Prove", fmt.Sprintf("ENI %s of node %s carries its ownership proof (key %s)", a.ENI, a.Node, key))
	return nil, nil
}
