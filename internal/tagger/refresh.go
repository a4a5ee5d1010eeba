package tagger

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// release requeues the pods waiting in Conflict on an ENI whose record
// was just removed, with its tags: the ENI may be theirs to tag now. The
// inventory would not bring them back, as they have no record of their
// own.
func (r *Reconciler) release(eni string) {
	for _, key := range r.pods.release(eni) {
		r.requeue(key)
	}
}

// onRefresh runs after every refresh of the tagger's inventory scope: it
// requeues pods whose ENI drifted from what was applied,
// and requeues records of pods that are gone (deleted while the operator
// was down), all without any AWS call.
func (r *Reconciler) onRefresh(ctx context.Context) {
	for _, rec := range r.ledger.All() {
		e, ok := r.ec2.ENI(rec.ENI)
		if !ok {
			// The ENI the pod's tags were written to is gone (the
			// inventory lists every ENI of the VPC): the pod is looked at
			// again, so it reports ENINotFound or finds its new ENI
			// instead of staying Synced on one that no longer exists.
			r.requeue(rec.Pod)
			continue
		}
		drifted := rec.Hash != "" && e.Tags[HashTag] != rec.Hash && !r.opts.AllowSharedENITagging
		for k, v := range rec.Tags {
			if e.Tags[k] != v {
				drifted = true
			}
		}
		if drifted {
			r.metrics.drift.Inc()
			r.requeue(rec.Pod)
		}
	}
	// A token someone removed by hand (docs/troubleshooting.md's fix for a stale one)
	// frees an ENI without any release: its waiting pods look again.
	for _, key := range r.pods.waiting() {
		r.requeue(key)
	}
	r.sweep(ctx)
}

// sweep requeues ledger records whose pod no longer exists, and those
// whose pod lost everything of the tagger's while the operator was down:
// its event passed the predicate only if the ledger had loaded by then.
func (r *Reconciler) sweep(ctx context.Context) {
	for _, rec := range r.ledger.All() {
		ns, name, _ := strings.Cut(rec.Pod, "/")
		var pod corev1.Pod
		err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod)
		if apierrors.IsNotFound(err) || (err == nil && (string(pod.UID) != rec.UID || !PodMarks(r.opts.AnnotationKey).On(&pod))) {
			r.requeue(rec.Pod)
		}
	}
}
