package nodeeni

import (
	"cmp"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
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
	return nodeENIsNamed(en)
}

func nodeENIsNamed(en *v1alpha1.ENINode) []string {
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

// shareOf is the entries of an ENINode that name the NodeENI.
func shareOf(en *v1alpha1.ENINode, nodeENI string) []v1alpha1.ENIAttachment {
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

// withShare returns the entries with the NodeENI's share replaced by
// share, sorted by NodeENI, device index and ENI.
func withShare(entries []v1alpha1.ENIAttachment, nodeENI string, share []v1alpha1.ENIAttachment) []v1alpha1.ENIAttachment {
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

// sameShare compares two shares, order aside.
func sameShare(a, b []v1alpha1.ENIAttachment) bool {
	return equality.Semantic.DeepEqual(sortedShare(a), sortedShare(b))
}

func sortedShare(s []v1alpha1.ENIAttachment) []v1alpha1.ENIAttachment {
	if len(s) == 0 {
		return nil
	}
	return slices.SortedFunc(slices.Values(s), func(a, b v1alpha1.ENIAttachment) int { return strings.Compare(a.ENIID, b.ENIID) })
}

// sharesByNode splits planned entries by node, each naming the NodeENI,
// their messages within what the API takes.
func sharesByNode(nodeENI string, planned []v1alpha1.ENIAttachment) map[string][]v1alpha1.ENIAttachment {
	out := map[string][]v1alpha1.ENIAttachment{}
	for _, a := range planned {
		a.NodeENI = nodeENI
		a.Message = bounded.Truncate(a.Message, bounded.Message)
		out[a.NodeID] = append(out[a.NodeID], a)
	}
	return out
}

// held reads the ENINodes (from the cache) that hold entries of the
// NodeENI, by node.
func (r *reconciler) held(ctx context.Context, nodeENI string) (map[string]*v1alpha1.ENINode, error) {
	list := &v1alpha1.ENINodeList{}
	if err := r.client.List(ctx, list, client.MatchingFields{shareIndex: nodeENI}); err != nil {
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
func (r *reconciler) dropShares(ctx context.Context, nodeENI string) error {
	defer r.shares.forgetWhere(func(key string) bool { return strings.HasPrefix(key, nodeENI+"/") })
	held, err := r.held(ctx, nodeENI)
	if err != nil || len(held) == 0 {
		return err
	}
	// Its creates' records go too: what they vouched for is the NodeENI's
	// finalizer's to clean up, and it is gone.
	drop := func(c v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) { return c, false }
	_, err = r.writeShares(ctx, nodeENI, plannedShares{update: drop}, held, metav1.Now())
	return err
}

// recordCreates gives a node's create actions their nonces and records
// them in the node's ENINode (spec.creates) before any create is sent:
// one write for the node's creates of the pass.
func (r *reconciler) recordCreates(ctx context.Context, ne *v1alpha1.NodeENI, node string, acts []action) ([]action, error) {
	var creates []v1alpha1.CreateRecord
	now := metav1.NewTime(r.now())
	out := slices.Clone(acts)
	for i := range out {
		if out[i].Kind != actCreate {
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
	if err := r.writeShare(ctx, ne.Name, shareWrite{node: node, now: now, creates: creates}); err != nil {
		return nil, fmt.Errorf("node %s: recording the nonces of its creates in its ENINode: %w", node, err)
	}
	list := make([]nodeCreate, len(creates))
	for i, c := range creates {
		list[i] = nodeCreate{CreateRecord: c, Node: node}
	}
	r.births.recorded(list)
	return out, nil
}

// updateCreates decides what becomes of the NodeENI's records of creates
// (updateCreate) once the planned entries are written.
func (r *reconciler) updateCreates(uid string, planned []v1alpha1.ENIAttachment) func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) {
	showing := map[string][]string{}
	for _, o := range ofNodeENI(r.ec2, uid) {
		if n := o.Tags[TagNonce]; n != "" {
			showing[n] = append(showing[n], o.ID)
		}
	}
	attached := map[string]bool{}
	for _, a := range planned {
		if a.Status == v1alpha1.AttachmentAttached {
			attached[a.ENIID] = true
		}
	}
	now := r.now()
	return func(c v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool) {
		return updateCreate(c, showing[c.Nonce], attached, r.births.isSettled(c.Nonce), now)
	}
}

// plannedShares are a NodeENI's planned entries on every node and what
// becomes of its records of creates (updateCreates).
type plannedShares struct {
	entries []v1alpha1.ENIAttachment
	update  func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)
}

// shareWrite is one node's share to write, stamped at now.
type shareWrite struct {
	node    string
	entries []v1alpha1.ENIAttachment
	now     metav1.Time
	// creates, when set, are records to add to spec.creates; the entries
	// are then left as they are.
	creates []v1alpha1.CreateRecord
	// update, when set, decides what becomes of the NodeENI's records of
	// creates: each kept (perhaps bound) or dropped.
	update func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)
}

// updatedCreates returns a node's spec.creates with the NodeENI's records
// updated, and the nonces dropped.
func updatedCreates(all []v1alpha1.CreateRecord, nodeENI string, update func(v1alpha1.CreateRecord) (v1alpha1.CreateRecord, bool)) ([]v1alpha1.CreateRecord, []string) {
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

// writeShares makes each node's ENINode hold the NodeENI's planned
// entries, stamped (unchanged ones keep their lastUpdated), and drops
// its entries from the nodes it no longer plans for. Only changed shares
// are written, so a steady state writes nothing. It returns the stamped
// entries of every node.
//
// update decides what becomes of the NodeENI's records of creates; a
// node whose records it changes is written too.
func (r *reconciler) writeShares(ctx context.Context, nodeENI string, p plannedShares, held map[string]*v1alpha1.ENINode, now metav1.Time) ([]v1alpha1.ENIAttachment, error) {
	update := p.update
	byNode := sharesByNode(nodeENI, p.entries)
	var out []v1alpha1.ENIAttachment
	var writes []shareWrite
	recordsChange := func(node string) bool {
		if en := held[node]; en != nil {
			now, _ := updatedCreates(en.Spec.Creates, nodeENI, update)
			return !equality.Semantic.DeepEqual(now, en.Spec.Creates)
		}
		return false
	}
	for node, want := range byNode {
		had := shareOf(held[node], nodeENI)
		stamped := attachmentsSince(had, want, now)
		out = append(out, stamped...)
		if !sameShare(had, stamped) || recordsChange(node) {
			writes = append(writes, shareWrite{node: node, entries: stamped, now: now, update: update})
		}
	}
	for node := range held {
		if _, ok := byNode[node]; !ok {
			writes = append(writes, shareWrite{node: node, now: now, update: update})
		}
	}
	slices.SortFunc(writes, func(a, b shareWrite) int { return strings.Compare(a.node, b.node) })
	errs := make([]error, len(writes))
	sem := make(chan struct{}, shareWriters)
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = r.writeShare(ctx, nodeENI, w)
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
func (r *reconciler) writeShare(ctx context.Context, nodeENI string, w shareWrite) error {
	var reader client.Reader = r.client
	return retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		defer func() { reader = r.live }()
		en := &v1alpha1.ENINode{}
		err = reader.Get(ctx, types.NamespacedName{Name: w.node}, en)
		if apierrors.IsNotFound(err) {
			return r.createShare(ctx, nodeENI, w)
		}
		if err != nil {
			return err
		}
		old := en.DeepCopy()
		// Earlier versions made the Node its owner; its records must
		// outlive the Node (createShare).
		en.OwnerReferences = slices.DeleteFunc(en.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Node" && o.APIVersion == "v1" })
		var dropped []string
		if len(w.creates) > 0 {
			en.Spec.Creates = append(en.Spec.Creates, w.creates...)
		} else {
			// Stamped again against what the object holds: the cache the
			// share was stamped against may have been behind.
			entries := attachmentsSince(shareOf(en, nodeENI), w.entries, w.now)
			en.Spec.Attachments = withShare(en.Spec.Attachments, nodeENI, entries)
			en.Spec.Creates, dropped = updatedCreates(en.Spec.Creates, nodeENI, w.update)
			r.rememberShare(nodeENI, w.node, entries)
		}
		defer func() {
			if err == nil {
				for _, n := range dropped {
					r.births.forget(n)
				}
			}
		}()
		if equality.Semantic.DeepEqual(old.Spec, en.Spec) && len(old.OwnerReferences) == len(en.OwnerReferences) {
			return nil
		}
		if len(en.Spec.Attachments) == 0 && len(en.Spec.Creates) == 0 {
			err = r.client.Delete(ctx, en, client.Preconditions{UID: &en.UID, ResourceVersion: &en.ResourceVersion})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		return r.client.Patch(ctx, en, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
	})
}

// createShare creates a node's ENINode holding the share. A node that is
// gone gets none: its entries only count in the NodeENI's conditions.
func (r *reconciler) createShare(ctx context.Context, nodeENI string, w shareWrite) error {
	if len(w.entries) == 0 && len(w.creates) == 0 {
		return nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: w.node}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	// Not owned by the Node: its records prove the node's ENIs the
	// operator's until they are cleaned up, also after the Node is gone.
	en := &v1alpha1.ENINode{
		ObjectMeta: metav1.ObjectMeta{Name: w.node},
		Spec:       v1alpha1.ENINodeSpec{Attachments: withShare(nil, nodeENI, w.entries), Creates: w.creates},
	}
	r.rememberShare(nodeENI, w.node, w.entries)
	err := r.client.Create(ctx, en)
	if apierrors.IsAlreadyExists(err) {
		// Another NodeENI created it meanwhile: patch it instead.
		return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("eninodes").GroupResource(), w.node, err)
	}
	return err
}

// rememberShare records a share as written, in the object's order (the
// order the predicate sees it in).
func (r *reconciler) rememberShare(nodeENI, node string, entries []v1alpha1.ENIAttachment) {
	r.shares.remember(shareKey(nodeENI, node), sortedShare(entries))
}

// reportsOf are the agents' reports in the ENINodes, by node and ENI: a
// report counts only for an ENI of its own node.
func reportsOf(held map[string]*v1alpha1.ENINode) map[reportKey]v1alpha1.InterfaceStatus {
	out := map[reportKey]v1alpha1.InterfaceStatus{}
	for node, en := range held {
		for _, s := range en.Status.Interfaces {
			out[reportKey{node: node, eni: s.ENIID}] = s
		}
	}
	return out
}

// reportKey names an agent's report: its node and the ENI.
type reportKey struct{ node, eni string }

func shareKey(nodeENI, node string) string { return nodeENI + "/" + node }

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
			if !sameReports(o.Status.Interfaces, n.Status.Interfaces) {
				return true
			}
			for _, name := range slices.Concat(nodeENIsNamed(o), nodeENIsNamed(n)) {
				share := shareOf(n, name)
				if !sameShare(shareOf(o, name), share) && shares.foreign(shareKey(name, n.Name), sortedShare(share)) {
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
