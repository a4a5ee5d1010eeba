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
// because it has none, is the operator's all the same: this process
// created it, or a counted status entry names it where EC2 shows it — in
// that subnet, attached to the instance of the node the entry and its
// tags name, at the index its tags (and the entry) name. The second
// covers ENIs of versions before proofs: each gains its proof once.
func vouched(e ec2.ENI, l legacyStatus, createdHere bool) bool {
	if createdHere {
		return true
	}
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

// vouches is vouched for an ENI of the NodeENI: its legacy status and
// this process's creates.
func (r *reconciler) vouches(l legacyStatus, e ec2.ENI) bool {
	return vouched(e, l, r.unsigned.has(e.ID))
}

// proving returns the actions that sign the NodeENI's ENIs needing it:
// the vouched-for unproven ones (which join the trusted list) and those
// proven with a key other than the ring's current one (rotation).
func (r *reconciler) proving(l legacyStatus, trusted []owned, all []owned, v verdicts) ([]owned, []action) {
	var acts []action
	for _, o := range all {
		if v.reasons[o.ID] != UntrustedUnproven || !r.vouches(l, o.ENI) {
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
