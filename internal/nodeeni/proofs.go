package nodeeni

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// unsigned are the ENIs this process created whose proof write has not
// succeeded yet: EC2's answer to the create named them, so they are the
// operator's although they carry no proof. After a restart such an ENI
// cannot be told from a copy and is left alone (reported as Unproven).
type unsigned struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newUnsigned() *unsigned { return &unsigned{ids: map[string]bool{}} }

func (u *unsigned) set(id string, pending bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if pending {
		u.ids[id] = true
	} else {
		delete(u.ids, id)
	}
}

func (u *unsigned) has(id string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ids[id]
}

// vouched reports whether an ENI that passed every check but the proof,
// because it has none, is the operator's all the same: this process
// created it, or the NodeENI's status, which only the operator writes
// (the admission policy keeps the agents to status.interfaces), names it
// on the node and instance its tags name. The second covers ENIs of
// versions before proofs: each gains its proof once, where the status the
// operator wrote agrees with its tags. A copy of the tags onto another
// ENI is named by no status entry.
func vouched(e ec2.ENI, records []v1alpha1.ENIAttachment, createdHere bool) bool {
	if createdHere {
		return true
	}
	for _, a := range records {
		if a.ENIID == e.ID && a.NodeID == e.Tags[TagNode] && a.InstanceID == e.Tags[TagInstance] {
			return true
		}
	}
	return false
}

// vouches is vouched for an ENI of ne: its status and this process's
// creates.
func (r *reconciler) vouches(ne *v1alpha1.NodeENI, e ec2.ENI) bool {
	return vouched(e, ne.Status.Attachments, r.unsigned.has(e.ID))
}

// proving returns the actions that sign the NodeENI's ENIs needing it:
// the vouched-for unproven ones (which join the trusted list) and those
// proven with a key other than the ring's current one (rotation).
func (r *reconciler) proving(ne *v1alpha1.NodeENI, trusted []owned, all []owned, v verdicts) ([]owned, []action) {
	var acts []action
	for _, o := range all {
		if v.reasons[o.ID] != UntrustedUnproven || !r.vouches(ne, o.ENI) {
			continue
		}
		trusted = append(trusted, o)
		acts = append(acts, r.proveAction(o))
	}
	for _, o := range trusted {
		if key, ok := v.signedBy[o.ID]; ok && key != r.trust.keys.Current() {
			acts = append(acts, r.proveAction(o))
		}
	}
	return trusted, acts
}

func (r *reconciler) proveAction(o owned) action {
	return action{Kind: actProve, Node: o.Node, ENI: o.ID, Tags: proofTag(r.trust.keys, o.ID, o.Tags)}
}

// writeProof writes an ENI's proof: one CreateTags.
func (r *reconciler) writeProof(ctx context.Context, id string, tags map[string]string) error {
	err := r.ec2.CreateTags(ctx, id, tags)
	r.metrics.op(actProve, err)
	if err == nil {
		r.unsigned.set(id, false)
	}
	return err
}

// prove signs an ENI of an earlier version or re-signs one with the
// current key, and says so.
func (r *reconciler) prove(ctx context.Context, a action, ev *nodeEvents) (*blocked, error) {
	if err := r.writeProof(ctx, a.ENI, a.Tags); ec2.IsNotFound(err) {
		return nil, nil // a new ENI EC2 does not show yet: signed on the next pass
	} else if err != nil {
		return r.failed(ev, a, "writing the ownership proof of "+a.ENI, err)
	}
	log.FromContext(ctx).Info("signed ENI's ownership proof", "node", a.Node, "eni", a.ENI, "key", r.trust.keys.Current())
	ev.add(corev1.EventTypeNormal, "Signed", "Prove", fmt.Sprintf("ENI %s of node %s carries its ownership proof (key %s)", a.ENI, a.Node, r.trust.keys.Current()))
	return nil, nil
}
