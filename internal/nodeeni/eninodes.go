package nodeeni

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// A NodeENI's entries live in the ENINodes of their nodes, one object per
// node (api/v1alpha1): each NodeENI's share of a node's spec.attachments
// is the entries naming it. Each write is one node's, small and bounded,
// however many nodes a NodeENI selects; the node's agent reports in the
// same object's status.

// shareIndex indexes ENINodes by the NodeENIs their entries name.
const shareIndex = "spec.attachments.nodeENI"

// shareWriters bounds the ENINode writes of one reconcile in flight.
const shareWriters = 8

// sharesIndexed lists the NodeENIs an ENINode's entries and records of
// creates name.
func sharesIndexed(o client.Object) []string {
	en, ok := o.(*v1alpha1.ENINode)
	if !ok {
		return nil
	}
	return eniplan.NodeENIsNamed(en)
}

// eniNodes reads and writes the NodeENIs' shares of the ENINodes: their
// entries, and the records of creates written before each create.
type eniNodes struct {
	client client.Client
	// live reads the API server, past the cache: after a conflict.
	live   client.Reader
	ec2    EC2
	births *births
	// shares is a digest of each share as last written (ownWrites).
	shares *ownWrites
	clock  clock.PassiveClock
}

// held reads the ENINodes (from the cache) that hold entries of the
// NodeENI, by node.
func (es *eniNodes) held(ctx context.Context, nodeENI string) (map[string]*v1alpha1.ENINode, error) {
	list := &v1alpha1.ENINodeList{}
	if err := es.client.List(ctx, list, client.MatchingFields{shareIndex: nodeENI}); err != nil {
		return nil, err
	}
	out := make(map[string]*v1alpha1.ENINode, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// dropShares removes a NodeENI's entries from every ENINode, and forgets
// its shares.
func (es *eniNodes) dropShares(ctx context.Context, nodeENI string) error {
	defer es.shares.forgetWhere(func(key string) bool { return strings.HasPrefix(key, nodeENI+"/") })
	held, err := es.held(ctx, nodeENI)
	if err != nil || len(held) == 0 {
		return err
	}
	// Its creates' records go too: what they vouched for is the NodeENI's
	// finalizer's to clean up, and it is gone.
	drop := func(c v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) { return c, false }
	_, err = es.writeShares(ctx, nodeENI, eniplan.PlannedShares{Update: drop}, held, metav1.NewTime(es.clock.Now()))
	return err
}

// recordCreates gives a node's create actions their nonces and records
// them in the node's ENINode (spec.creates) before any create is sent:
// one write for the node's creates of the pass.
func (es *eniNodes) recordCreates(ctx context.Context, ne *v1alpha1.NodeENI, node string, acts []eniplan.Action) ([]eniplan.Action, error) {
	var creates []v1alpha1.CreateRecord
	now := metav1.NewTime(es.clock.Now())
	out := slices.Clone(acts)
	for i := range out {
		if out[i].Kind != eniplan.ActCreate {
			continue
		}
		nonce, err := ownership.NewNonce()
		if err != nil {
			return nil, err
		}
		out[i].Nonce = nonce
		creates = append(creates, v1alpha1.CreateRecord{Nonce: nonce, NodeENI: ne.Name, SubnetID: out[i].Want.Subnet,
			DeviceIndex: int32(out[i].Index), Since: now})
	}
	if len(creates) == 0 {
		return acts, nil
	}
	if err := es.writeShare(ctx, ne.Name, eniplan.ShareWrite{Node: node, Now: now, Creates: creates}); err != nil {
		return nil, fmt.Errorf("node %s: recording the nonces of its creates in its ENINode: %w", node, err)
	}
	list := make([]eniplan.NodeCreate, len(creates))
	for i, c := range creates {
		list[i] = eniplan.NodeCreate{CreateRecord: c, Node: node}
	}
	es.births.recorded(list)
	return out, nil
}

// updateCreates decides what becomes of the NodeENI's records of creates
// (UpdateCreate) once the planned entries are written.
func (es *eniNodes) updateCreates(uid string, planned []v1alpha1.ENIAttachment) func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) {
	showing := map[string][]string{}
	for _, o := range ofNodeENI(es.ec2, uid) {
		if n := o.Tags[eniplan.TagNonce]; n != "" {
			showing[n] = append(showing[n], o.ID)
		}
	}
	attached := map[string]bool{}
	for _, a := range planned {
		if a.Status == v1alpha1.AttachmentAttached {
			attached[a.ENIID] = true
		}
	}
	now := es.clock.Now()
	return func(c v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) {
		return eniplan.UpdateCreate(c, showing[c.Nonce], attached, es.births.isSettled(c.Nonce), now)
	}
}

// writeShares makes each node's ENINode hold the NodeENI's planned
// entries, stamped (unchanged ones keep their lastUpdated), and drops
// its entries from the nodes it no longer plans for. Only changed shares
// are written, so a steady state writes nothing. It returns the stamped
// entries of every node.
//
// update decides what becomes of the NodeENI's records of creates; a
// node whose records it changes is written too.
func (es *eniNodes) writeShares(ctx context.Context, nodeENI string, p eniplan.PlannedShares, held map[string]*v1alpha1.ENINode, now metav1.Time) ([]v1alpha1.ENIAttachment, error) {
	update := p.Update
	byNode := eniplan.SharesByNode(nodeENI, p.Entries)
	var out []v1alpha1.ENIAttachment
	var writes []eniplan.ShareWrite
	recordsChange := func(node string) bool {
		if en := held[node]; en != nil {
			now, _ := eniplan.UpdatedCreates(en.Spec.Creates, nodeENI, update)
			return !equality.Semantic.DeepEqual(now, en.Spec.Creates)
		}
		return false
	}
	for node, want := range byNode {
		had := eniplan.ShareOf(held[node], nodeENI)
		stamped := eniplan.AttachmentsSince(had, want, now)
		out = append(out, stamped...)
		if !eniplan.SameShare(had, stamped) || recordsChange(node) {
			writes = append(writes, eniplan.ShareWrite{Node: node, Entries: stamped, Now: now, Update: update})
		}
	}
	for node := range held {
		if _, ok := byNode[node]; !ok {
			writes = append(writes, eniplan.ShareWrite{Node: node, Now: now, Update: update})
		}
	}
	slices.SortFunc(writes, func(a, b eniplan.ShareWrite) int { return strings.Compare(a.Node, b.Node) })
	errs := make([]error, len(writes))
	sem := make(chan struct{}, shareWriters)
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = es.writeShare(ctx, nodeENI, w)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// writeShare writes one node's share of the NodeENI: creates the node's
// ENINode when it has none, patches it under an optimistic lock (other
// NodeENIs write their shares of the same object), and deletes it once no
// NodeENI has an entry or a record of a create left.
// The first try reads the cache; a conflict re-reads the API server.
func (es *eniNodes) writeShare(ctx context.Context, nodeENI string, w eniplan.ShareWrite) error {
	var reader client.Reader = es.client
	return retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		defer func() { reader = es.live }()
		en := &v1alpha1.ENINode{}
		err = reader.Get(ctx, types.NamespacedName{Name: w.Node}, en)
		if apierrors.IsNotFound(err) {
			return es.createShare(ctx, nodeENI, w)
		}
		if err != nil {
			return err
		}
		old := en.DeepCopy()
		// Earlier versions made the Node its owner; its records must
		// outlive the Node (createShare).
		en.OwnerReferences = slices.DeleteFunc(en.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Node" && o.APIVersion == "v1" })
		var dropped []string
		if len(w.Creates) > 0 {
			en.Spec.Creates = append(en.Spec.Creates, w.Creates...)
		} else {
			// Stamped again against what the object holds: the cache the
			// share was stamped against may have been behind.
			entries := eniplan.AttachmentsSince(eniplan.ShareOf(en, nodeENI), w.Entries, w.Now)
			en.Spec.Attachments = eniplan.WithShare(en.Spec.Attachments, nodeENI, entries)
			en.Spec.Creates, dropped = eniplan.UpdatedCreates(en.Spec.Creates, nodeENI, w.Update)
			es.rememberShare(nodeENI, w.Node, entries)
		}
		defer func() {
			if err == nil {
				for _, n := range dropped {
					es.births.forget(n)
				}
			}
		}()
		if equality.Semantic.DeepEqual(old.Spec, en.Spec) && len(old.OwnerReferences) == len(en.OwnerReferences) {
			return nil
		}
		if len(en.Spec.Attachments) == 0 && len(en.Spec.Creates) == 0 {
			err = es.client.Delete(ctx, en, client.Preconditions{UID: &en.UID, ResourceVersion: &en.ResourceVersion})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		return es.client.Patch(ctx, en, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
	})
}

// createShare creates a node's ENINode holding the share. A node that is
// gone gets none: its entries only count in the NodeENI's conditions.
func (es *eniNodes) createShare(ctx context.Context, nodeENI string, w eniplan.ShareWrite) error {
	if len(w.Entries) == 0 && len(w.Creates) == 0 {
		return nil
	}
	node := &corev1.Node{}
	if err := es.client.Get(ctx, types.NamespacedName{Name: w.Node}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	// Not owned by the Node: its records prove the node's ENIs the
	// operator's until they are cleaned up, also after the Node is gone.
	en := &v1alpha1.ENINode{
		ObjectMeta: metav1.ObjectMeta{Name: w.Node},
		Spec:       v1alpha1.ENINodeSpec{Attachments: eniplan.WithShare(nil, nodeENI, w.Entries), Creates: w.Creates},
	}
	es.rememberShare(nodeENI, w.Node, w.Entries)
	err := es.client.Create(ctx, en)
	if apierrors.IsAlreadyExists(err) {
		// Another NodeENI created it meanwhile: patch it instead.
		return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("eninodes").GroupResource(), w.Node, err)
	}
	return err
}

// rememberShare records a share as written, in the object's order (the
// order the predicate sees it in).
func (es *eniNodes) rememberShare(nodeENI, node string, entries []v1alpha1.ENIAttachment) {
	es.shares.remember(eniplan.ShareKey(nodeENI, node), eniplan.SortedShare(entries))
}

// eniNodeChanged passes the ENINode events the NodeENI controller must
// see: a report of an agent changed (the InterfacesConfigured
// aggregate), a share edited by anyone but this process (written back at
// once), or the object deleted while it held shares (recreated if its
// node is still there). The controller's own writes pass none of these.
func eniNodeChanged(shares *ownWrites) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			// The node's shares go with the object: nothing is left to
			// compare them with, and a node that went leaves no digest.
			shares.forgetWhere(func(key string) bool { return strings.HasSuffix(key, "/"+e.Object.GetName()) })
			en, ok := e.Object.(*v1alpha1.ENINode)
			return !ok || len(en.Spec.Attachments) > 0
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.ENINode)
			n, okNew := e.ObjectNew.(*v1alpha1.ENINode)
			if !okOld || !okNew {
				return true
			}
			if !eniplan.SameReports(o.Status.Interfaces, n.Status.Interfaces) {
				return true
			}
			for _, name := range slices.Concat(eniplan.NodeENIsNamed(o), eniplan.NodeENIsNamed(n)) {
				share := eniplan.ShareOf(n, name)
				if !eniplan.SameShare(eniplan.ShareOf(o, name), share) && shares.foreign(eniplan.ShareKey(name, n.Name), eniplan.SortedShare(share)) {
					return true
				}
			}
			return false
		},
	}
}

// nodeENIsOf maps an ENINode to the NodeENIs its entries name.
func nodeENIsOf(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, name := range sharesIndexed(o) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return out
}
