package nodeeni

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
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
	client   client.Client
	ec2      EC2
	opts     Options
	metrics  *metrics
	recorder recorder.EventRecorder
	tokens   *tokens
	// trust decides which ENIs are the operator's (trust.go); unsigned
	// are those this process created whose proof is not written yet.
	trust    trustCheck
	unsigned *unsigned
	// distrusted reports each untrusted ENI of a NodeENI once per reason
	// (and each ENI of aws-multi-eni-controller not adopted).
	distrusted *distrustLog
	// originals lists aws-multi-eni-controller's ENIs while any may be
	// left to adopt (originals.go).
	originals originals
	// own is the controller's part of each status as last written, and
	// shares its share of each ENINode (status.go): a change by anyone
	// else is reconciled at once.
	own, shares *ownWrites
	// live reads the API server, past the cache: after a conflict.
	live client.Reader
}

// Reconcile implements reconcile.Reconciler.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ne, fresh, res, err := r.admit(ctx, req)
	if ne == nil || err != nil {
		return res, err
	}
	deleting := !ne.DeletionTimestamp.IsZero()
	in, nodeBlocks, err := r.planInput(ctx, ne, deleting)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.adopt(ctx, ne, fresh, &in); err != nil {
		return reconcile.Result{}, err
	}
	c := classify(in)
	if need := instancesToPlace(in, c); len(need) > 0 {
		if in.Instances, err = r.instances(ctx, need); err != nil {
			return reconcile.Result{}, err
		}
	}
	p := planClassified(in, c)
	passOf := func(in planInput, o acted) pass {
		return pass{ne: ne, in: in, acted: o, blocks: append(append(slices.Clone(nodeBlocks), p.Blocked...), o.failures...),
			pending: len(o.after.Actions) > 0, deleting: deleting}
	}
	progress := func(in planInput, o acted) {
		if _, err := r.writeStatus(ctx, passOf(in, o)); err != nil {
			log.FromContext(ctx).Error(err, "writing a round's progress; the end of the pass writes it again")
		}
	}
	o := r.act(ctx, ne, &in, p, progress)
	ps := passOf(in, o)
	recheck, err := r.writeStatus(ctx, ps)
	if err != nil {
		return reconcile.Result{}, err
	}
	return r.next(ctx, ps, recheck)
}

// pass is one reconcile of a NodeENI: what it planned from, what
// carrying the plan out left, every node found blocked, whether steps
// are still under way, and whether the NodeENI is being deleted.
type pass struct {
	ne *v1alpha1.NodeENI
	in planInput
	acted
	blocks            []blocked
	pending, deleting bool
}

// admit reads the NodeENI and decides whether it can be planned now. It
// returns nil when it cannot, with the result to return. fresh says the
// finalizer was added just now: the NodeENI was never
// aws-multi-eni-controller's, which adds the same finalizer before
// anything else.
func (r *reconciler) admit(ctx context.Context, req reconcile.Request) (*v1alpha1.NodeENI, bool, reconcile.Result, error) {
	ne := &v1alpha1.NodeENI{}
	if err := r.client.Get(ctx, req.NamespacedName, ne); err != nil {
		if apierrors.IsNotFound(err) {
			for _, state := range []string{"attached", "pending", "failed"} {
				r.metrics.perNodeENI.DeleteLabelValues(req.Name, state)
			}
			// Gone without its finalizer's cleanup (removed by hand): its
			// entries leave the ENINodes.
			return nil, false, reconcile.Result{}, r.dropShares(ctx, req.Name)
		}
		return nil, false, reconcile.Result{}, err
	}
	deleting := !ne.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(ne, Finalizer) {
		return nil, false, reconcile.Result{}, nil
	}
	if down, err := r.ec2Unreachable(ctx, ne); down || err != nil {
		return nil, false, reconcile.Result{}, err // EC2 answering again re-checks every NodeENI
	}
	if !r.ec2.Synced(InventoryScope) {
		// The first inventory refresh is under way; planning without it
		// would create ENIs that already exist.
		return nil, false, reconcile.Result{RequeueAfter: r.opts.DetachPollInterval}, nil
	}
	fresh := !deleting && !controllerutil.ContainsFinalizer(ne, Finalizer)
	if fresh {
		old := ne.DeepCopy()
		controllerutil.AddFinalizer(ne, Finalizer)
		if err := r.client.Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
			return nil, false, reconcile.Result{}, err
		}
	}
	return ne, fresh, reconcile.Result{}, nil
}

// acted is what carrying a plan out left: the plan of the state after it
// (for status), the entries of the deprecated status.attachments still
// needed, the nodes EC2 refused, the first other error, and in dry-run
// what would have been done.
type acted struct {
	after    plan
	legacy   []v1alpha1.ENIAttachment
	failures []blocked
	execErr  error
	dry      string
}

// act carries the plan out, or in dry-run only says what it would do.
// It goes in rounds of opts.RoundNodes nodes and tells progress what
// each round but the last left, for the status.
func (r *reconciler) act(ctx context.Context, ne *v1alpha1.NodeENI, in *planInput, p plan, progress func(planInput, acted)) acted {
	unchanged := legacyRecords(ne.Status.Attachments, in.Adopt, in.Prove)
	if r.opts.DryRun {
		return acted{after: p, legacy: unchanged, dry: dryRunSummary(p.Actions, in.Deleting)} // nothing changed
	}
	if len(p.Actions) == 0 {
		return acted{after: p, legacy: unchanged} // nothing changed: the plan is the status
	}
	var o acted
	adopting := in.Adopt
	rounds := roundsOf(p.Actions, r.opts.RoundNodes)
	for i, round := range rounds {
		failures, err := r.execute(ctx, ne, round)
		o.failures = append(o.failures, failures...)
		if o.execErr == nil {
			o.execErr = err
		}
		r.replan(ctx, ne, in, adopting, &o)
		if i < len(rounds)-1 {
			progress(*in, o)
		}
	}
	return o
}

// replan sets what the status describes after actions: the plan made
// again from the EC2 state, which now holds their results (no EC2 call).
func (r *reconciler) replan(ctx context.Context, ne *v1alpha1.NodeENI, in *planInput, adopting []action, o *acted) {
	in.ENIs, in.Prove = r.trusted(ctx, ne, ofNodeENI(r.ec2, string(ne.UID)))
	in.Adopt = nil // adopted ENIs are now among the NodeENI's own
	o.after = makePlan(*in)
	// An ENI whose adoption EC2 refused (or is yet to come) stays as the
	// original recorded it, so its node's agent keeps it configured.
	waiting := notAdopted(adopting, in.ENIs)
	o.after.Attachments = append(o.after.Attachments, legacyRecords(ne.Status.Attachments, waiting)...)
	o.legacy = legacyRecords(ne.Status.Attachments, waiting, in.Prove)
}

// roundsOf splits actions into rounds of at most n nodes each, nodes in
// plan order; a node's actions stay together, in their order (execute
// skips a node's later steps when one fails).
func roundsOf(acts []action, n int) [][]action {
	order, byNode := perNode(acts)
	var rounds [][]action
	for chunk := range slices.Chunk(order, max(n, 1)) {
		var round []action
		for _, node := range chunk {
			round = append(round, byNode[node]...)
		}
		rounds = append(rounds, round)
	}
	return rounds
}

// perNode groups actions by node: the nodes in the order of their first
// action, and each node's actions in their order.
func perNode(acts []action) ([]string, map[string][]action) {
	byNode := map[string][]action{}
	var order []string
	for _, a := range acts {
		if _, ok := byNode[a.Node]; !ok {
			order = append(order, a.Node)
		}
		byNode[a.Node] = append(byNode[a.Node], a)
	}
	return order, byNode
}

// next decides when the NodeENI is looked at again.
func (r *reconciler) next(ctx context.Context, ps pass, recheck time.Duration) (reconcile.Result, error) {
	if r.opts.DryRun && (!ps.deleting || len(ps.in.ENIs) > 0) {
		// Nothing changes by itself: the next resync looks again. A
		// NodeENI being deleted keeps its finalizer while it has ENIs;
		// one without any is released as usual (a read of EC2 and a
		// finalizer removal, no EC2 change).
		return reconcile.Result{RequeueAfter: recheck}, nil
	}
	if ps.execErr != nil {
		return reconcile.Result{}, ps.execErr
	}
	if ps.deleting && len(ps.in.ENIs) == 0 {
		return r.release(ctx, ps.ne)
	}
	if ps.pending && len(ps.failures) == 0 {
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

// planInput gathers what the plan depends on: the spec resolved against
// the catalog, the matching nodes and the NodeENI's ENIs.
func (r *reconciler) planInput(ctx context.Context, ne *v1alpha1.NodeENI, deleting bool) (planInput, []blocked, error) {
	in := planInput{
		Base:                int(ne.Spec.DeviceIndex),
		DeleteOnTermination: ne.Spec.DeleteOnTermination == nil || *ne.Spec.DeleteOnTermination,
		Description:         ne.Spec.Description,
		Tags:                specTags(ne.Spec.Tags),
		Deleting:            deleting,
		SubnetsComplete:     true,
		MTU:                 ne.Spec.MTU,
		Nodes:               map[string]bool{},
		NodeInstances:       map[string]string{},
		CIDRs:               map[string]string{},
	}
	in.ENIs, in.Prove = r.trusted(ctx, ne, ofNodeENI(r.ec2, string(ne.UID)))
	if in.Base < 1 {
		in.Base = 1
	}
	if deleting {
		return in, nil, nil
	}
	res, err := r.resolve(ctx, &ne.Spec)
	if err != nil {
		return in, nil, err
	}
	in.SecurityGroups, in.SubnetsComplete = res.Groups, res.SubnetsComplete
	for _, s := range res.Subnets {
		in.CIDRs[s.ID] = s.CIDR
	}
	blocks := append([]blocked(nil), res.Problems...)

	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes); err != nil {
		return in, nil, err
	}
	sel := labels.SelectorFromSet(ne.Spec.NodeSelector)
	var infos []nodeInfo
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !n.DeletionTimestamp.IsZero() {
			continue // going away: its ENIs are cleaned up as for a deleted node
		}
		in.Nodes[n.Name] = true
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		info, err := nodeInfoOf(n)
		if err != nil {
			blocks = append(blocks, blocked{Node: n.Name, Reason: ReasonNotOnEC2, Message: err.Error()})
			continue
		}
		in.NodeInstances[n.Name] = info.Instance
		infos = append(infos, info)
	}
	var zoneBlocks []blocked
	in.Wants, zoneBlocks = desired(infos, res.Subnets)
	return in, append(blocks, zoneBlocks...), nil
}

// instances describes the instances the plan wants to attach to. The
// calls run concurrently, so the client batches them into one
// DescribeInstances; each instance type's limit is then read once.
func (r *reconciler) instances(ctx context.Context, ids []string) (map[string]instanceView, error) {
	out := make(map[string]instanceView, len(ids))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := r.instance(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[id] = v
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for id, v := range out {
		if v.Type == "" {
			continue
		}
		n, err := r.ec2.MaxENIs(ctx, v.Type)
		if err != nil {
			return nil, fmt.Errorf("instance type %s: %w", v.Type, err)
		}
		v.MaxENIs = n
		out[id] = v
	}
	return out, nil
}

func (r *reconciler) instance(ctx context.Context, id string) (instanceView, error) {
	inst, err := r.ec2.GetInstance(ctx, id)
	if ec2.IsNotFound(err) {
		return instanceView{ID: id, State: "not found"}, nil
	}
	if err != nil {
		return instanceView{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	v := instanceView{ID: id, Type: inst.Type, State: inst.State, Zone: inst.AvailabilityZone, Slots: map[int]string{}}
	for _, e := range inst.ENIs {
		if e.Attachment != nil {
			v.Slots[e.Attachment.DeviceIndex] = e.ID
		}
	}
	return v, nil
}

// release removes the finalizer once EC2 itself confirms that no ENI of
// the NodeENI is left: the view could miss one created by an earlier
// process after the last refresh.
func (r *reconciler) release(ctx context.Context, ne *v1alpha1.NodeENI) (reconcile.Result, error) {
	left, err := r.ec2.ListENIs(ctx, ec2.Filter{Name: "tag:" + TagNodeENIUID, Values: []string{string(ne.UID)}},
		ec2.Filter{Name: "tag:" + TagCluster, Values: []string{r.opts.ClusterName}})
	if err != nil {
		return reconcile.Result{}, err
	}
	trustedLeft := 0
	for _, e := range left {
		reason, _ := r.trust.distrust(e, ne.Name)
		if reason == "" || reason == UntrustedUnproven && r.vouches(ne, e) {
			trustedLeft++
		}
	}
	// An ENI that only carries the NodeENI's tags is not the operator's
	// to delete, nor a reason to keep the NodeENI.
	if trustedLeft > 0 {
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
func (r *reconciler) trusted(ctx context.Context, ne *v1alpha1.NodeENI, list []owned) ([]owned, []action) {
	out, v := splitTrusted(r.trust, list, func(o owned) ec2.ENI { return o.ENI }, func(ec2.ENI) string { return ne.Name })
	out, prove := r.proving(ne, out, list, v)
	for _, a := range prove {
		delete(v.reasons, a.ENI)
	}
	r.reportLeftAlone(ctx, ne, string(ne.UID), v, leftAlone{
		log: "ENI carries this NodeENI's ownership tags but fails the trust check; it is left alone", reason: "UntrustedENI", action: "Ignore",
		note: "%d ENIs carry this NodeENI's ownership tags but fail the trust check and are left alone (never detached, deleted or changed): %s"})
	return out, prove
}

// leftAlone says how ENIs the controller will not act on are reported.
type leftAlone struct {
	log, reason, action, note string // note: a format of the count and the list
}

// reportLeftAlone reports the ENIs whose reason (v) changed since the
// last pass under key: a log line each and one Warning event on the
// NodeENI (events of the same reason fold into one series, so one per
// ENI would hide all but the first).
func (r *reconciler) reportLeftAlone(ctx context.Context, ne *v1alpha1.NodeENI, key string, v verdicts, how leftAlone) {
	reasons, details := v.reasons, v.details
	changed := r.distrusted.update(key, reasons)
	if len(changed) == 0 {
		return
	}
	slices.Sort(changed)
	items := make([]string, len(changed))
	for i, id := range changed {
		log.FromContext(ctx).Info(how.log, "eni", id, "reason", reasons[id], "detail", details[id])
		items[i] = fmt.Sprintf("%s (%s: %s)", id, reasons[id], details[id])
	}
	r.event(ne, corev1.EventTypeWarning, how.reason, how.action, fmt.Sprintf(how.note, len(changed), bounded.List(items, "; ", bounded.Items)))
}

// tokens remembers, per ENI-to-be, which ClientToken attempt is current
// and the creation time its tags carry: a create retried in this process
// must send exactly the same parameters, or EC2 refuses the token. Both
// are kept until the ENI is attached, since until then a create may be
// repeated (an inventory taken before EC2 showed the new ENI drops it
// from the view). answered is when EC2 last answered the create.
type tokens struct {
	mu       sync.Mutex
	attempt  map[string]int
	created  map[string]time.Time
	answered map[string]time.Time
	// unseen is when EC2 first refused the key's current token as used
	// with other parameters while no Describe showed its ENI.
	unseen map[string]time.Time
}

func newTokens() *tokens {
	return &tokens{attempt: map[string]int{}, created: map[string]time.Time{}, answered: map[string]time.Time{},
		unseen: map[string]time.Time{}}
}

// unseenSince returns when the key's token was first found used by an
// ENI nobody can see, recording now if this is the first time.
func (t *tokens) unseenSince(key string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.unseen[key]; ok {
		return s
	}
	t.unseen[key] = now
	return now
}

func tokenKey(uid string, w want, base int) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", uid, w.Node, w.Instance, w.Subnet, base)
}

// current returns the attempt and the creation time for a key.
func (t *tokens) current(key string) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.attempt[key]
	ck := fmt.Sprintf("%s|%d", key, a)
	c, ok := t.created[ck]
	if !ok {
		c = time.Now().UTC().Truncate(time.Second)
		t.created[ck] = c
	}
	return a, c
}

// burn moves a key to its next attempt: its token names a deleted ENI.
func (t *tokens) burn(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(key)
	t.attempt[key]++
}

// answer records that EC2 answered the key's create with an ENI at now.
func (t *tokens) answer(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answered[key] = now
}

// lastAnswer is when EC2 last answered the key's create in this process
// (zero when it did not).
func (t *tokens) lastAnswer(key string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered[key]
}

// done forgets a key whose ENI is attached, keeping the memory bounded.
func (t *tokens) done(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(key)
}

// forget drops what is kept of the key's current attempt; t.mu is held.
func (t *tokens) forget(key string) {
	delete(t.created, fmt.Sprintf("%s|%d", key, t.attempt[key]))
	delete(t.answered, key)
	delete(t.unseen, key)
}
