package tagger

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// fieldOwner is the operator's server-side apply field manager on pods.
const fieldOwner = "eni-operator-tagger"

// nodeNameIndex indexes pods by node, to find a shared ENI's other pods.
const nodeNameIndex = "spec.nodeName"

// Reconciler keeps one pod's ENI tags in line with its annotation.
type Reconciler struct {
	client client.Client
	// apiReader reads from the API server, not the (trimmed) cache.
	apiReader client.Reader
	ec2       EC2
	// inventory tells that the EC2 state keeps InventoryScope fresh.
	inventory bool
	ledger    *Ledger
	recorder  recorder.EventRecorder
	metrics   *metrics
	opts      Options
	policy    tagplan.Policy
	shared    sharedENIPods
	subnets   map[string]bool
	// pods is what must outlive a reconcile (pods.go); slots bound the
	// reconciles not waiting (slots.go); queue is the controller's own.
	pods  *pods
	slots slots
	queue podQueue
	// turns paces the conclusions of writes at the Kubernetes budget.
	turns turns
	// onPod writes the pod's condition, annotations and finalizer;
	// revisits brings pods back that no event would.
	onPod    podWriter
	revisits revisits
	// finder finds a pod's ENI; tags writes its tags.
	finder eniFinder
	tags   tagWriter
	// tally is where each pod tag policies select stands, for the
	// policies' status and sweeps.
	tally       *policyTally
	policyReads policyReads
}

// verdict is what a reconcile reports on the pod.
type verdict struct {
	status  corev1.ConditionStatus
	reason  string
	message string
	warning bool // emit a Warning event
	event   bool // emit an event (Normal unless warning)
}

// Reconcile implements reconcile.Reconciler. It does one pod's whole
// work over its podWork — observe the pod and its record, work out the
// tags it wants, locate its ENI, decide the tag plan, apply it, conclude
// — and any phase may end it early with its result. Nothing of the pod
// is left in flight when it returns.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	start := r.opts.Clock.Now()
	defer func() {
		// controller-runtime logs a returned error in full: keep it short.
		err = bounded.Error(err)
		r.metrics.duration.Observe(r.opts.Clock.Since(start).Seconds())
		switch {
		case err != nil:
			r.metrics.reconciles.WithLabelValues("error").Inc()
		case res.RequeueAfter > 0:
			r.metrics.reconciles.WithLabelValues("requeue").Inc()
		default:
			r.metrics.reconciles.WithLabelValues("success").Inc()
		}
	}()
	w := &podWork{key: req.String(), name: req.NamespacedName, slot: &slot{of: r.slots}}
	if err := w.slot.take(ctx); err != nil {
		return reconcile.Result{}, err
	}
	defer w.slot.give()
	if s := phases.Run(ctx, w, r.observe, r.wanted, r.locate, r.decide, r.apply); s != nil {
		return s.Result, s.Err
	}
	if !w.wrote {
		if wait := r.pods.lastAppliedWait(w.key, &w.pod, w.plan.Hash, r.opts.Clock.Now()); wait > 0 {
			// An earlier reconcile has just concluded this: the watch
			// brings it.
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if w.wrote {
		if wait := r.turns.wait(r.opts.Clock.Now()); wait > 0 {
			// The budget is spoken for: the pod concludes at its turn
			// (turns.go). Its tags are written; the ledger has them.
			r.keepInLedger(w)
			if changedEvent(w) {
				r.onPod.recorder.Eventf(&w.pod, nil, corev1.EventTypeNormal, ReasonSynced, "Tag", "%d tags written to ENI %s (hash %s); the pod's record follows",
					len(w.own), w.eni.ID, w.plan.Hash)
			}
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	// Concluding waits on the Kubernetes API's budget: without the slot.
	w.slot.give()
	// A conclusion the cached pod does not show yet writes it; the next
	// reconcile waits for the watch to bring it (also when this one only
	// concludes an earlier reconcile's tag write, at its turn).
	records := !shows(&w.pod, w.plan.Hash)
	if err := r.conclude(ctx, w); err != nil {
		return reconcile.Result{}, err
	}
	if records && len(w.own) > 0 {
		r.pods.noteLastApplied(w.key, w.pod.UID, w.plan.Hash, r.opts.Clock.Now())
	}
	return reconcile.Result{}, nil
}

// podWork is what the phases of one reconcile learn about a pod.
type podWork struct {
	key  string
	name types.NamespacedName
	// slot is the reconcile's hold on r.slots, given back while it
	// waits for its ENI lookup.
	slot   *slot
	pod    corev1.Pod
	rec    Record
	hasRec bool
	// asked are the tags the annotation asks for, after the policy;
	// applied and appliedHash what was written for the pod before.
	asked, applied map[string]string
	appliedHash    string
	ip             string
	eni            awstypes.ENI
	// wrote tells that this reconcile wrote the pod's tags.
	wrote bool
	// desired is what the ENI should carry (the merge of its pods' tags
	// when shared), own what the pod is recorded as owning, conflicts the
	// keys pods sharing the ENI disagree on.
	desired, own, conflicts map[string]string
	shared                  bool
	plan                    tagplan.Plan
	// selected tells that an ENITagPolicy selects the pod; matched names
	// them, origins says where each asked key comes from, external are
	// the keys they leave to other tools, overridden the annotation's
	// keys their enforced tags override, policyConflicts their
	// disagreements.
	selected bool
	// policied tells that policies select the pod or did at its last
	// reconcile: a change may be theirs, not its author's.
	policied        bool
	matched         []string
	origins         map[string]tagpolicy.Origin
	external        []string
	overridden      []tagpolicy.AnnotationConflict
	policyConflicts []tagpolicy.PolicyConflict
	// externalConflicts are keys one policy enforces and another leaves
	// to other tools.
	externalConflicts []tagpolicy.ExternalConflict
}

func (r *Reconciler) reportStop(ctx context.Context, w *podWork, o verdict) *phases.Stop {
	verdict, problem := verdictPending, o.reason
	if o.reason == ReasonPolicyRefused {
		verdict, problem = verdictRefused, o.message
	}
	r.tally.note(w.key, w.tallied(verdict, problem))
	return phases.Done(r.onPod.report(ctx, &w.pod, o))
}

// tallied is where the pod stands for the tag policies that select it
// (their status).
func (w *podWork) tallied(verdict policyVerdict, problem string) tallied {
	return tallied{namespace: w.pod.Namespace, matched: w.matched, verdict: verdict, problem: problem}
}
