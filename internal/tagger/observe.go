package tagger

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// observe reads the pod and its record; a pod that is gone or finished
// ends here.
func (r *Reconciler) observe(ctx context.Context, w *podWork) *phases.Stop {
	if err := r.ledger.WaitLoaded(ctx); err != nil {
		return phases.Done(err)
	}
	if err := r.opts.Policies.waitLoaded(ctx); err != nil {
		return phases.Done(err)
	}
	if err := r.client.Get(ctx, w.name, &w.pod); apierrors.IsNotFound(err) {
		return phases.Done(r.forget(ctx, w.key))
	} else if err != nil {
		return phases.Done(err)
	}
	w.rec, w.hasRec = r.ledger.Get(w.key)
	if w.hasRec && w.rec.UID != string(w.pod.UID) {
		// A new pod with an old pod's name: the old one's tags go first.
		if err := r.forget(ctx, w.key); err != nil {
			return phases.Done(err)
		}
		w.hasRec = false
	}
	if w.pod.DeletionTimestamp != nil || w.pod.Status.Phase == corev1.PodSucceeded || w.pod.Status.Phase == corev1.PodFailed {
		return phases.Done(r.finish(ctx, w))
	}
	return nil
}

// forget removes the tags recorded for a pod that no longer exists (or
// whose name a new pod took) and drops its record. Tags other pods on a
// shared ENI still want stay.
func (r *Reconciler) forget(ctx context.Context, key string) error {
	r.pods.forget(key)
	r.tally.drop(key)
	rec, ok := r.ledger.Get(key)
	if !ok {
		return nil
	}
	if e, known := r.ec2.ENI(rec.ENI); known {
		if k, nodeENI := tagkeys.HasKeyWithPrefix(e.Tags, tagkeys.NodeENIPrefix); nodeENI {
			// A record naming a NodeENI interface was not written by this
			// tagger (it refuses them): a crafted ledger or import entry.
			// The NodeENI controller's tags stay; the record goes.
			log.FromContext(ctx).Info("not removing tags from a NodeENI interface named by a ledger record", "eni", rec.ENI, "tag", k)
			if !r.opts.DryRun {
				r.ledger.Delete(key)
			}
			return nil
		}
	}
	remove := maps.Clone(rec.Tags)
	maps.DeleteFunc(remove, func(k, _ string) bool { return tagkeys.IsReserved(k) }) // never ours to remove; the token is added below
	others := false
	for _, o := range r.ledger.OnENI(rec.ENI) {
		if o.Pod != key {
			others = true
			for k, v := range o.Tags {
				if remove[k] == v {
					delete(remove, k)
				}
			}
		}
	}
	if rec.Hash != "" && !others {
		remove[HashTag] = rec.Hash
	}
	if len(remove) > 0 && !r.opts.DryRun {
		r.metrics.writes.WithLabelValues("cleanup").Inc()
		// Value-matched: a key someone else has rewritten since stays.
		if err := r.ec2.DeleteTags(ctx, rec.ENI, remove); err != nil && !ec2.IsNotFound(err) {
			return fmt.Errorf("removing the tags of deleted pod %s from ENI %s: %w", key, rec.ENI, err)
		}
	}
	if !r.opts.DryRun {
		r.ledger.Delete(key)
	}
	r.revisits.release(rec.ENI)
	log.FromContext(ctx).Info("removed the tags of a pod that is gone", "eni", rec.ENI, "tags", len(remove))
	return nil
}

// finish handles a pod that is terminating or done: its tags go, then
// its finalizer.
func (r *Reconciler) finish(ctx context.Context, w *podWork) error {
	pod, key := &w.pod, w.key
	r.recoverLedgerRecord(ctx, w)
	if err := r.forget(ctx, key); err != nil {
		r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonAWSError, "Cleanup", "%s", errorText(err))
		return err
	}
	return r.onPod.dropFinalizer(ctx, pod)
}

// recoverLedgerRecord gives a pod that is going away its ledger record back
// from its last-applied annotations when the ledger has none: the record
// was lost in a crash before the ledger's batch was written. Only if the
// ENI that holds the pod's IP carries the token the annotations name —
// the tags are then the ones this operator wrote for the pod — so forget
// removes them instead of leaving them behind.
func (r *Reconciler) recoverLedgerRecord(ctx context.Context, w *podWork) {
	pod := &w.pod
	if _, ok := r.ledger.Get(w.key); ok || r.opts.DryRun || pod.Spec.HostNetwork {
		// A hostNetwork pod was never tagged: its last-applied
		// annotations are not worth an EC2 lookup of the node's address.
		return
	}
	applied, hash := lastApplied(pod, Record{}, false)
	ip := podIP(pod)
	if len(applied) == 0 || hash == "" || ip == "" {
		return
	}
	eni, err := r.finder.find(ctx, w.slot, ip, Record{}, false)
	if err != nil || eni.Tags[HashTag] != hash {
		return
	}
	r.ledger.Put(Record{Pod: w.key, UID: string(pod.UID), ENI: eni.ID, Tags: applied, Hash: hash})
}
