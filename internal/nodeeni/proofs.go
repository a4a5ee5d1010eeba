package nodeeni

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// prove signs an ENI of an earlier version, re-signs one with the current
// key, or restores the proof of one its ENINode entry vouches for, and
// says so: a restore loudly, since a proof removed or of a key no longer
// in the ring means the tag or the key Secret was tampered with or lost.
func (ex *executor) prove(ctx context.Context, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	err := ex.ec2.CreateTagsAlone(ctx, a.ENI, a.Tags)
	ex.metrics.op(eniplan.ActProve, err)
	if ec2.IsNotFound(err) {
		return nil, nil // EC2 does not show the ENI yet: signed on the next pass
	} else if err != nil {
		return blockOrError(ev, a, "writing the ownership proof of "+a.ENI, err)
	}
	key := ex.trust.Keys.Current()
	if a.Reason == eniplan.ProofRestored {
		ex.metrics.restored.Inc()
		log.FromContext(ctx).Error(nil, "restored the ownership proof of an ENI its ENINode entry vouches for: its proof tag was removed, or signed with a key no longer in the key ring; if the key Secret was lost or replaced, restore the old keys (docs/operations.md#ownership-keys)",
			"node", a.Node, "eni", a.ENI, "key", key)
		ev.add(corev1.EventTypeWarning, eniplan.ProofRestored, "Prove", fmt.Sprintf("ENI %s of node %s had no valid ownership proof (tag removed, or its key is not in the key ring); its ENINode entry vouches for it, so it is signed again with key %s. If the key Secret was lost or replaced, restore the old keys: docs/operations.md#ownership-keys", a.ENI, a.Node, key))
		return nil, nil
	}
	log.FromContext(ctx).Info("signed ENI's ownership proof", "node", a.Node, "eni", a.ENI, "key", key)
	ev.add(corev1.EventTypeNormal, "Signed", "Prove", fmt.Sprintf("ENI %s of node %s carries its ownership proof (key %s)", a.ENI, a.Node, key))
	return nil, nil
}
