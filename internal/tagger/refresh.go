package tagger

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/eni-operator/eni-operator/internal/ec2"
)

// revisits brings pods back to the reconciler when no event of theirs
// would: their ENI drifted or went (after each inventory refresh), their
// pod went while the operator was down, or the ENI they wait on freed.
type revisits struct {
	ledger  *Ledger
	ec2     EC2
	pods    *pods
	client  client.Reader
	requeue func(key string)
	// annotationKey is --annotation-key; sharedENIs
	// --allow-shared-eni-tagging, where the token is the ENI's pods'.
	annotationKey string
	sharedENIs    bool
	drift         prometheus.Counter
}

// release requeues the pods waiting in Conflict on an ENI whose record
// was just removed, with its tags: the ENI may be theirs to tag now. The
// inventory would not bring them back, as they have no record of their
// own.
func (rv *revisits) release(eni string) {
	for _, key := range rv.pods.release(eni) {
		rv.requeue(key)
	}
}

// onRefresh runs after every refresh of the tagger's inventory scope: it
// requeues pods whose ENI drifted from what was applied,
// and requeues records of pods that are gone (deleted while the operator
// was down), all without any AWS call.
func (rv *revisits) onRefresh(ctx context.Context) {
	for _, rec := range rv.ledger.All() {
		e, ok := rv.ec2.ENI(rec.ENI)
		if !ok {
			// The ENI the pod's tags were written to is gone (the
			// inventory lists every ENI of the VPC): the pod is looked at
			// again, so it reports ENINotFound or finds its new ENI
			// instead of staying Synced on one that no longer exists.
			rv.requeue(rec.Pod)
			continue
		}
		drifted := rec.Hash != "" && e.Tags[HashTag] != rec.Hash && !rv.sharedENIs
		for k, v := range rec.Tags {
			if e.Tags[k] != v {
				drifted = true
			}
		}
		if drifted {
			rv.drift.Inc()
			rv.requeue(rec.Pod)
		}
	}
	// A token someone removed by hand (docs/troubleshooting.md's fix for a stale one)
	// frees an ENI without any release: its waiting pods look again.
	for _, key := range rv.pods.waiting() {
		rv.requeue(key)
	}
	rv.sweep(ctx)
}

// sweep requeues ledger records whose pod no longer exists, and those
// whose pod lost everything of the tagger's while the operator was down:
// its event passed the predicate only if the ledger had loaded by then.
func (rv *revisits) sweep(ctx context.Context) {
	for _, rec := range rv.ledger.All() {
		ns, name, _ := strings.Cut(rec.Pod, "/")
		var pod corev1.Pod
		err := rv.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod)
		if apierrors.IsNotFound(err) || (err == nil && (string(pod.UID) != rec.UID || !PodMarks(rv.annotationKey).On(&pod))) {
			rv.requeue(rec.Pod)
		}
	}
}

// watchInventory keeps the tagger's ENIs fresh in the EC2 state, and
// after each refresh requeues the pods whose ENI drifted or is gone. With
// the inventory off (--eni-inventory-interval=0), pods deleted while the
// operator was down are looked for once at start instead.
func (rv *revisits) watchInventory(mgr manager.Manager, state *ec2.State, o Options) error {
	if o.InventoryInterval <= 0 {
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if rv.ledger.WaitLoaded(ctx) == nil && mgr.GetCache().WaitForCacheSync(ctx) {
				rv.sweep(ctx)
			}
			return nil
		}))
	}
	var filters []ec2.Filter
	if len(o.SubnetIDs) > 0 {
		filters = append(filters, ec2.Filter{Name: "subnet-id", Values: o.SubnetIDs})
	}
	if err := state.Watch(ec2.Scope{Name: InventoryScope, Filters: filters, Interval: o.InventoryInterval}); err != nil {
		return err
	}
	refreshed, err := state.Subscribe(InventoryScope)
	if err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-refreshed:
				if rv.ledger.WaitLoaded(ctx) == nil {
					rv.onRefresh(ctx)
				}
			}
		}
	}))
}
