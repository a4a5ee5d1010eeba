package nodeeni

import (
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// Finalizer keeps a NodeENI until its ENIs are gone. It is
// aws-multi-eni-controller's, so NodeENIs that project created are
// cleaned up and released by this operator too.
const Finalizer = "nodeeni.networking.k8s.aws/finalizer"

// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/status,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/finalizers,verbs=update
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=eninodes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler brings one NodeENI's ENIs to its spec. It reads the EC2
// state (inventory + this process's changes, catalog), plans, and calls EC2 only
// for the plan's mutations and for the instances it is about to attach to.
type reconciler struct {
	client  client.Client
	ec2     EC2
	opts    Options
	metrics *metrics
	// trust decides which ENIs are the operator's (trust.go); births
	// (trust's) are this process's creates (births.go).
	trust  eniplan.TrustCheck
	births *births
	// applied are records of applied tags not yet in the ENINodes (tagrecord.go).
	applied *appliedTags
	// adoption plans the adoption of aws-multi-eni-controller's ENIs
	// (originals.go).
	adoption *adopter
	// own is the controller's part of each status as last written
	// (status.go): a change by anyone else is reconciled at once.
	own *ownWrites
	// eniNodes reads and writes the NodeENI's shares of the ENINodes;
	// exec carries a plan's actions out.
	eniNodes eniNodes
	exec     executor
	// report makes the NodeENI's events, and reports each untrusted ENI
	// once per reason (and each ENI of aws-multi-eni-controller not
	// adopted).
	report reporter
	// live reads the API server, past the cache: after a conflict.
	live client.Reader
	// status writes each pass's outcome.
	status statusWriter
}

// Reconcile implements reconcile.Reconciler. It runs the phases of one
// pass over the NodeENI in order — admit it, gather what the plan depends
// on, decide the plan, carry it out, conclude with the status — then
// decides when to look again; any phase may end the pass early.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &pass{req: req}
	if s := phases.Run(ctx, p, r.admit, r.gather, r.decide, r.carryOut, r.conclude); s != nil {
		return s.Result, s.Err
	}
	return r.next(ctx, p)
}

// pass is one reconcile of a NodeENI: what it planned from and the plan,
// what carrying the plan out left, every node found blocked, whether
// steps are still under way, whether the NodeENI is being deleted, and
// when an agent's report still awaited is due.
type pass struct {
	req reconcile.Request
	ne  *v1alpha1.NodeENI
	// fresh: the finalizer was added just now, so the NodeENI was never
	// aws-multi-eni-controller's (which adds it before anything else).
	fresh bool
	in    eniplan.PlanInput
	// nodeBlocks are the nodes the input found blocked, plan what was
	// decided for the rest.
	nodeBlocks []eniplan.Blocked
	plan       eniplan.Plan
	eniplan.Acted
	blocks            []eniplan.Blocked
	pending, deleting bool
	recheck           time.Duration
}

// carried records what carrying the plan out left, from the input as it
// is now.
func (p *pass) carried(in eniplan.PlanInput, o eniplan.Acted) {
	p.in, p.Acted = in, o
	p.blocks = append(append(slices.Clone(p.nodeBlocks), p.plan.Blocked...), o.Failures...)
	p.pending = len(o.After.Actions) > 0
}

// admit reads the NodeENI and decides whether it can be planned now.
func (r *reconciler) admit(ctx context.Context, p *pass) *phases.Stop {
	ne := &v1alpha1.NodeENI{}
	if err := r.client.Get(ctx, p.req.NamespacedName, ne); err != nil {
		if apierrors.IsNotFound(err) {
			for _, state := range []string{"attached", "pending", "failed"} {
				r.metrics.perNodeENI.DeleteLabelValues(p.req.Name, state)
			}
			// Gone without its finalizer's cleanup (removed by hand): its
			// entries leave the ENINodes.
			return phases.Done(r.eniNodes.dropShares(ctx, p.req.Name))
		}
		return phases.Done(err)
	}
	p.ne, p.deleting = ne, !ne.DeletionTimestamp.IsZero()
	if p.deleting && !controllerutil.ContainsFinalizer(ne, Finalizer) {
		return phases.Done(nil)
	}
	if down, err := r.ec2Unreachable(ctx, ne); down || err != nil {
		return phases.Done(err) // EC2 answering again re-checks every NodeENI
	}
	if !r.ec2.Synced(InventoryScope) {
		// The first inventory refresh is under way; planning without it
		// would create ENIs that already exist.
		return phases.After(r.opts.DetachPollInterval)
	}
	p.fresh = !p.deleting && !controllerutil.ContainsFinalizer(ne, Finalizer)
	if p.fresh {
		old := ne.DeepCopy()
		controllerutil.AddFinalizer(ne, Finalizer)
		if err := r.client.Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
			return phases.Done(err)
		}
	}
	return nil
}

// gather reads what the plan depends on (PlanInput), with
// aws-multi-eni-controller's ENIs that are to be adopted.
func (r *reconciler) gather(ctx context.Context, p *pass) *phases.Stop {
	var err error
	if p.in, p.nodeBlocks, err = r.planInput(ctx, p.ne, p.deleting); err != nil {
		return phases.Done(err)
	}
	if err := r.adoption.plan(ctx, p.ne, p.fresh, &p.in); err != nil {
		return phases.Done(err)
	}
	return nil
}

// decide makes the plan, describing (batched) only the instances an ENI
// is to be created or attached on.
func (r *reconciler) decide(ctx context.Context, p *pass) *phases.Stop {
	c := eniplan.Classify(p.in)
	if need := eniplan.InstancesToPlace(p.in, c); len(need) > 0 {
		var err error
		if p.in.Instances, err = instances(ctx, r.ec2, need, p.in.Settings.Card); err != nil {
			return phases.Done(err)
		}
	}
	p.plan = eniplan.PlanClassified(p.in, c)
	return nil
}

// carryOut carries the plan out in rounds; each round but the last has
// its progress written to the status at once.
func (r *reconciler) carryOut(ctx context.Context, p *pass) *phases.Stop {
	progress := func(in eniplan.PlanInput, o eniplan.Acted) {
		p.carried(in, o)
		if _, err := r.status.write(ctx, *p); err != nil {
			log.FromContext(ctx).Error(err, "writing a round's progress; the end of the pass writes it again")
		}
	}
	o := r.act(ctx, p.ne, &p.in, p.plan, progress)
	p.carried(p.in, o)
	return nil
}

// conclude writes the status of the pass.
func (r *reconciler) conclude(ctx context.Context, p *pass) *phases.Stop {
	var err error
	if p.recheck, err = r.status.write(ctx, *p); err != nil {
		return phases.Done(err)
	}
	return nil
}

// next decides when the NodeENI is looked at again.
func (r *reconciler) next(ctx context.Context, ps *pass) (reconcile.Result, error) {
	recheck := ps.recheck
	if r.opts.DryRun && (!ps.deleting || len(ps.in.ENIs) > 0) {
		// Nothing changes by itself: the next resync looks again. A
		// NodeENI being deleted keeps its finalizer while it has ENIs;
		// one without any is released as usual (a read of EC2 and a
		// finalizer removal, no EC2 change).
		return reconcile.Result{RequeueAfter: recheck}, nil
	}
	if ps.ExecErr != nil {
		return reconcile.Result{}, ps.ExecErr
	}
	if ps.deleting && len(ps.in.ENIs) == 0 {
		return r.release(ctx, ps.ne, ps.in.Legacy, ps.in.Records)
	}
	if ps.pending && len(ps.Failures) == 0 {
		// An ENI is on its way to "available", or more steps follow from
		// the ones just taken: look again soon instead of holding a
		// worker while EC2 works.
		return reconcile.Result{RequeueAfter: r.opts.DetachPollInterval}, nil
	}
	// Steps EC2 refused are tried again at the next resync, not in a loop.
	// An agent report still awaited within its grace period is looked at
	// again when the grace is over (recheck is 0 otherwise).
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// release removes the finalizer once EC2 itself confirms that no ENI of
// the NodeENI is left: the view could miss one created by an earlier
// process after the last refresh.
func (r *reconciler) release(ctx context.Context, ne *v1alpha1.NodeENI, l eniplan.LegacyStatus, rec eniplan.Records) (reconcile.Result, error) {
	left, err := r.ec2.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.TagNodeENIUID, Values: []string{string(ne.UID)}},
		ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{r.opts.ClusterName}})
	if err != nil {
		return reconcile.Result{}, err
	}
	trusted, v := eniplan.SplitTrusted(r.trust, left, func(e awstypes.ENI) awstypes.ENI { return e }, func(awstypes.ENI) string { return ne.Name }, r.births.evidence(rec))
	trustedLeft := len(trusted)
	for _, e := range left {
		if v.Reasons[e.ID] == eniplan.UntrustedUnproven && eniplan.Vouched(e, l) {
			trustedLeft++
		}
	}
	// An ENI that only carries the NodeENI's tags is not the operator's
	// to delete, nor a reason to keep the NodeENI. A create whose outcome
	// this process does not know may have made an ENI EC2 does not show
	// yet: the NodeENI waits for it (spec.creates).
	if trustedLeft > 0 || r.births.createsUnsettled(rec, left, r.opts.Clock.Now()) {
		return reconcile.Result{RequeueAfter: r.opts.DetachPollInterval}, nil
	}
	old := ne.DeepCopy()
	controllerutil.RemoveFinalizer(ne, Finalizer)
	if err := r.client.Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("all ENIs of the NodeENI are deleted; finalizer removed")
	return reconcile.Result{}, nil
}

// trusted returns the ENIs of a NodeENI that pass the trust check
// (trust.go), with the unproven ones the operator can vouch for, and the
// proofs to write first (proofs.go). The others are left alone entirely:
// out of the plan, out of the status, never detached, deleted, modified
// or tagged. Each is reported once per reason: a Warning event on the
// NodeENI and a log line.
func (r *reconciler) trusted(ctx context.Context, ne *v1alpha1.NodeENI, l eniplan.LegacyStatus, rec eniplan.Records, list []eniplan.Owned) ([]eniplan.Owned, []eniplan.Action, map[string]string) {
	out, v := eniplan.SplitTrusted(r.trust, list, func(o eniplan.Owned) awstypes.ENI { return o.ENI }, func(awstypes.ENI) string { return ne.Name }, r.births.evidence(rec))
	out, prove := eniplan.Proving(r.trust.Keys, l, out, list, v)
	for _, a := range prove {
		delete(v.Reasons, a.ENI)
	}
	r.report.leftAlone(ctx, ne, string(ne.UID), v, eniplan.LeftAlone{
		Log: "ENI carries this NodeENI's ownership tags but fails the trust check; it is left alone", Reason: "UntrustedENI", Action: "Ignore",
		Note: "%d ENIs carry this NodeENI's ownership tags but fail the trust check and are left alone (never detached, deleted or changed): %s"})
	return out, prove, v.Reasons
}
