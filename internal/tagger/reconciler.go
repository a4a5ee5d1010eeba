package tagger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
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
	policy    Policy
	subnets   map[string]bool
	// writer sends the planned writes; lookups finds ENIs the state does
	// not know; queue is the controller's own.
	writer  *writer
	lookups *lookups
	queue   podQueue

	limitMu  sync.Mutex
	limiters map[string]*rate.Limiter
	// recent are the records the writer has just written on pods.
	recent recentRecords
	// waiting are the pods refused as Conflict, by ENI, brought back when
	// a record on that ENI is released.
	waiting waiting

	warned warnings
}

// outcome is what a reconcile reports on the pod.
type outcome struct {
	status  corev1.ConditionStatus
	reason  string
	message string
	warning bool // emit a Warning event
	event   bool // emit an event (Normal unless warning)
}

// Reconcile implements reconcile.Reconciler. It runs the phases of one
// pod in order — observe the pod and its record, work out the tags it
// wants, locate its ENI, decide the tag plan, apply it, record the
// outcome — and any phase may end the reconcile early with its result.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	start := time.Now()
	defer func() {
		// controller-runtime logs a returned error in full: keep it short.
		err = bounded.Error(err)
		r.metrics.duration.Observe(time.Since(start).Seconds())
		switch {
		case err != nil:
			r.metrics.reconciles.WithLabelValues("error").Inc()
		case res.RequeueAfter > 0:
			r.metrics.reconciles.WithLabelValues("requeue").Inc()
		default:
			r.metrics.reconciles.WithLabelValues("success").Inc()
		}
	}()
	w := &podWork{key: req.String(), name: req.NamespacedName}
	for _, phase := range []func(context.Context, *podWork) *stop{
		r.observe, r.wanted, r.locate, r.decide, r.apply,
	} {
		if s := phase(ctx, w); s != nil {
			return s.res, s.err
		}
	}
	if wait := r.recent.wait(w.key, &w.pod, w.plan.Hash, time.Now()); wait > 0 {
		// The writer has just recorded this: the watch brings it.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{}, r.record(ctx, w)
}

// podWork is what the phases of one reconcile learn about a pod.
type podWork struct {
	key    string
	name   types.NamespacedName
	pod    corev1.Pod
	rec    Record
	hasRec bool
	// asked are the tags the annotation asks for, after the policy;
	// applied and appliedHash what was written for the pod before.
	asked, applied map[string]string
	appliedHash    string
	ip             string
	eni            ec2.ENI
	// wrote tells that this process's write for the pod just completed.
	wrote bool
	// desired is what the ENI should carry (the merge of its pods' tags
	// when shared), own what the pod is recorded as owning, conflicts the
	// keys pods sharing the ENI disagree on.
	desired, own, conflicts map[string]string
	shared                  bool
	plan                    Plan
}

// stop ends a reconcile early with a result.
type stop struct {
	res reconcile.Result
	err error
}

func done(err error) *stop { return &stop{err: err} }

func (r *Reconciler) reportStop(ctx context.Context, w *podWork, o outcome) *stop {
	return done(r.report(ctx, &w.pod, o))
}

// observe reads the pod and its record; a pod that is gone or finished
// ends here.
func (r *Reconciler) observe(ctx context.Context, w *podWork) *stop {
	if err := r.ledger.WaitLoaded(ctx); err != nil {
		return done(err)
	}
	if err := r.client.Get(ctx, w.name, &w.pod); apierrors.IsNotFound(err) {
		if r.writer.busy(w.key) {
			// A write for the pod is still queued, in flight or being
			// recorded: forgetting now would remove the tags of the
			// record before it, and the write would land after. Its end
			// brings the pod back, and its record then goes with the
			// rest (found by the soak figure: tags left behind by pods
			// deleted just after an annotation edit).
			return done(nil)
		}
		return done(r.forget(ctx, w.key))
	} else if err != nil {
		return done(err)
	}
	w.rec, w.hasRec = r.ledger.Get(w.key)
	if w.hasRec && w.rec.UID != string(w.pod.UID) {
		// A new pod with an old pod's name: the old one's tags go first.
		if err := r.forget(ctx, w.key); err != nil {
			return done(err)
		}
		w.hasRec = false
	}
	if w.pod.DeletionTimestamp != nil || w.pod.Status.Phase == corev1.PodSucceeded || w.pod.Status.Phase == corev1.PodFailed {
		return done(r.finish(ctx, &w.pod, w.key))
	}
	return nil
}

// wanted works out the tags the pod asks for and what it was given.
func (r *Reconciler) wanted(ctx context.Context, w *podWork) *stop {
	raw, annotated := w.pod.Annotations[r.opts.AnnotationKey]
	w.applied, w.appliedHash = recordedTags(&w.pod, w.rec, w.hasRec)
	if !annotated && len(w.applied) == 0 {
		// Nothing asked, nothing applied: a condition left from before
		// (InvalidTags of an annotation since removed, DryRun of a run
		// that has ended, Synced on an ENI whose record is gone) no longer
		// describes anything, so it goes. TagsRemoved stays: it is true.
		r.warned.clear(w.key)
		r.waiting.stop(w.key)
		if err := r.clearCondition(ctx, &w.pod); err != nil {
			return done(err)
		}
		return done(r.dropFinalizer(ctx, &w.pod))
	}
	if w.pod.Spec.HostNetwork {
		// Its address is the node's, and so is the ENI that holds it:
		// told before anything is parsed or looked up, so the pod costs
		// no EC2 call.
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonHostNetwork,
			message: fmt.Sprintf("the pod uses the host network: it shares its node's network and address, and the node's ENI is never tagged for a pod; annotation %s is ignored", r.opts.AnnotationKey),
			event:   true, warning: true})
	}
	asked, err := ParseAnnotation(raw)
	if err == nil {
		asked, err = r.policy.Desired(w.pod.Namespace, asked)
	}
	if err != nil {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonInvalidTags,
			message: invalidMessage(r.opts.AnnotationKey, err), warning: true, event: true})
	}
	w.asked = asked
	return nil
}

// locate finds the ENI that holds the pod's IP and checks it is one the
// tagger may tag.
func (r *Reconciler) locate(ctx context.Context, w *podWork) *stop {
	w.ip = podIP(&w.pod)
	if w.ip == "" {
		return done(nil) // the IP's arrival is an update that brings the pod back
	}
	eni, err := r.resolve(ctx, w.key, w.ip, w.rec, w.hasRec)
	if errors.Is(err, errLookupPending) {
		return done(nil) // the lookup's end brings the pod back
	}
	if ec2.IsNotFound(err) {
		retry := notFoundRetry(missingFor(&w.pod, time.Now()))
		gone := ""
		if w.hasRec && w.rec.ENI != "" {
			// The ENI the tags were written to no longer holds the IP
			// (deleted, or the address moved): say so, not Synced.
			gone = fmt.Sprintf("ENI %s, which carried the pod's tags, is gone; ", w.rec.ENI)
		}
		return &stop{res: reconcile.Result{RequeueAfter: retry}, err: r.report(ctx, &w.pod, outcome{status: corev1.ConditionFalse, reason: ReasonENINotFound,
			message: fmt.Sprintf("%sno ENI in the VPC holds the pod IP %s yet (addresses inside delegated prefixes are found only with the ENI inventory, --eni-inventory-interval > 0); retrying, less often the longer it lasts (at most every %v)", gone, w.ip, notFoundMaxRetry)})}
	}
	if err != nil {
		return done(r.awsFailure(ctx, &w.pod, "looking up the pod's ENI", err))
	}
	w.eni = eni
	if len(r.subnets) > 0 && !r.subnets[eni.SubnetID] {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonSubnetNotWanted,
			message: fmt.Sprintf("ENI %s is in subnet %s, which is not in --subnet-ids; not tagged", eni.ID, eni.SubnetID), event: true, warning: true})
	}
	if k, ok := tagkeys.HasKeyWithPrefix(eni.Tags, tagkeys.NodeENIPrefix); ok {
		// The NodeENI controller owns it and trusts only ENIs without the
		// tagger's token: tagging it would make the controller abandon
		// (and so leak) its own interface.
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonNodeENIInterface,
			message: fmt.Sprintf("ENI %s is a NodeENI interface (tag %s), owned by the NodeENI controller; it is tagged through its NodeENI's spec.tags, not pod annotations", eni.ID, bounded.Quoted(k)),
			event:   true, warning: true})
	}
	if r.writer.busy(w.key) {
		return done(nil) // the write's end brings the pod back
	}
	if err := r.writer.failure(w.key); err != nil {
		return done(r.awsFailure(ctx, &w.pod, "writing tags to ENI "+eni.ID, err))
	}
	return nil
}

// decide plans the tag diff: for the pod alone on a dedicated ENI, or
// merged with the other pods of a shared one.
func (r *Reconciler) decide(ctx context.Context, w *podWork) *stop {
	w.desired, w.own = w.asked, w.asked
	if nodeAddress(w.eni, w.ip) {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonNodeAddress,
			message: fmt.Sprintf("pod IP %s is the primary address of ENI %s, its instance's primary interface (device index 0): the node's own address and ENI, never tagged for a pod", w.ip, w.eni.ID),
			event:   true, warning: true})
	}
	w.shared = !dedicated(w.eni, w.ip)
	if w.shared {
		if s := r.decideShared(ctx, w); s != nil {
			return s
		}
	}
	w.plan = PlanTags(PlanInput{Desired: w.desired, Applied: w.applied, AppliedHash: w.appliedHash, ENITags: w.eni.Tags,
		IgnoreOwnership: r.opts.AllowSharedENITagging})
	switch {
	case w.plan.Conflict != "":
		// Another pod's tags may hold the ENI: its release brings this
		// pod back (waiting.go).
		r.waiting.wait(w.key, w.eni.ID)
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonConflict,
			message: fmt.Sprintf("not tagging ENI %s: %s. Use --allow-shared-eni-tagging if several owners are intended", w.eni.ID, w.plan.Conflict), event: true, warning: true})
	case w.plan.TooMany != nil:
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonInvalidTags,
			message: fmt.Sprintf("not tagging ENI %s: %v", w.eni.ID, w.plan.TooMany), event: true, warning: true})
	}
	if r.opts.DryRun {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonDryRun,
			message: fmt.Sprintf("dry run: would set %s and remove %s on ENI %s", describe(w.plan.Create), describe(w.plan.Delete), w.eni.ID), event: !w.plan.Empty()})
	}
	if !w.shared {
		w.own = w.plan.Applied
	}
	return nil
}

// decideShared merges the tags of the pods sharing the ENI (only with
// --allow-shared-eni-tagging).
func (r *Reconciler) decideShared(ctx context.Context, w *podWork) *stop {
	if !r.opts.AllowSharedENITagging {
		return r.reportStop(ctx, w, outcome{status: corev1.ConditionFalse, reason: ReasonSharedENI,
			message: fmt.Sprintf("pod IP %s is a secondary address or prefix of ENI %s, which other pods share; tags would apply to all of them. Use branch ENIs (security groups for pods) or run with --allow-shared-eni-tagging", w.ip, w.eni.ID),
			event:   true, warning: true})
	}
	var err error
	w.desired, w.conflicts, err = r.sharedDesired(ctx, &w.pod, w.eni, w.asked)
	if err != nil {
		return done(err)
	}
	// A disputed key is neither written nor removed; the pod keeps owning
	// it if its value is the one on the ENI, so it is cleaned up when the
	// pod goes.
	w.own = maps.Clone(w.asked)
	w.applied = maps.Clone(w.applied)
	for k := range w.conflicts {
		if w.applied[k] != w.asked[k] || w.eni.Tags[k] != w.asked[k] {
			delete(w.own, k)
		}
		delete(w.applied, k)
	}
	return nil
}

// apply hands the plan's writes, if any, to the writer, which also
// records their outcome; a plan with nothing to write goes on to record.
func (r *Reconciler) apply(ctx context.Context, w *podWork) *stop {
	if w.plan.Empty() {
		return nil
	}
	if wait := r.rateLimited(w.key); wait > 0 {
		return &stop{res: reconcile.Result{RequeueAfter: wait}}
	}
	r.writer.submit(w)
	return done(nil)
}

// record keeps the outcome in the ledger and on the pod and reports it.
func (r *Reconciler) record(ctx context.Context, w *podWork) error {
	r.recordInLedger(w)
	if err := r.recordOnPod(ctx, &w.pod, w.own, w.plan.Hash); err != nil {
		return err
	}
	switch {
	case len(w.conflicts) > 0:
		r.waiting.wait(w.key, w.eni.ID)
		return r.report(ctx, &w.pod, outcome{status: corev1.ConditionFalse, reason: ReasonConflict,
			message: fmt.Sprintf("ENI %s is shared and its pods disagree, so these tags are not written: %s; the others are in sync", w.eni.ID, conflictsText(w.conflicts)), event: true, warning: true})
	case len(w.desired) == 0:
		return r.report(ctx, &w.pod, outcome{status: corev1.ConditionFalse, reason: ReasonRemoved,
			message: fmt.Sprintf("no tags requested; the operator's tags were removed from ENI %s", w.eni.ID), event: w.wrote})
	}
	// The hash quoted is the token on the ENI (and in the pod's
	// last-applied-hash): after a key removal it is the earlier set's,
	// since removing a key does not rewrite the token.
	return r.report(ctx, &w.pod, outcome{status: corev1.ConditionTrue, reason: ReasonSynced,
		message: fmt.Sprintf("%d tags in sync on ENI %s (hash %s)", len(w.own), w.eni.ID, w.plan.Hash), event: changedEvent(w)})
}

// leaving tells whether the pod, as the cache shows it now, is gone,
// replaced by one of the same name, or being deleted with nothing of the
// tagger's holding it: its record then stays in the ledger only (so the
// tags go when the pod does), not on the pod. Under churn a write is
// recorded seconds after it was planned; patching pods already gone (404)
// or about to go spent the --kube-api-qps budget the living pods' records
// needed (the soak figure: at 50 pods/s no living pod became Synced). A
// pod held by the tagger's finalizer is recorded: its last-applied
// annotations are what a restart recovers a lost ledger write from.
func (r *Reconciler) leaving(ctx context.Context, planned *corev1.Pod) bool {
	var now corev1.Pod
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(planned), &now); err != nil {
		return apierrors.IsNotFound(err)
	}
	return now.UID != planned.UID || (now.DeletionTimestamp != nil && !controllerutil.ContainsFinalizer(&now, Finalizer))
}

// recordInLedger keeps the outcome in the ledger (in memory; written in
// batches).
func (r *Reconciler) recordInLedger(w *podWork) {
	if len(w.own) == 0 {
		r.ledger.Delete(w.key)
		r.release(w.eni.ID)
		return
	}
	r.ledger.Put(Record{Pod: w.key, UID: string(w.pod.UID), ENI: w.eni.ID, Tags: w.own, Hash: w.plan.Hash})
}

// changedEvent tells whether a Synced outcome gets a Normal event: only
// when a write changed tags the pod already had — someone edited the
// annotation of a running pod and wants to see it land. A pod's first
// tagging gets none: the condition says it, and a burst of 10,000 new
// pods would otherwise be 10,000 events (writes to the API server that
// crowd out the Warnings people look for).
func changedEvent(w *podWork) bool { return w.wrote && len(w.applied) > 0 }

// recordedTags returns what was applied for the pod: from the ledger, or
// from the pod's own annotations (pods tagged by k8s-eni-tagger).
func recordedTags(pod *corev1.Pod, rec Record, hasRec bool) (map[string]string, string) {
	if hasRec {
		return rec.Tags, rec.Hash
	}
	var applied map[string]string
	if raw := pod.Annotations[LastAppliedTagsAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &applied) // unreadable: treat as nothing applied
	}
	return applied, pod.Annotations[LastAppliedHashAnnotation]
}

// podIP prefers the IPv4 address; IPv6-only pods use their IPv6 one.
func podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" && !strings.Contains(pod.Status.PodIP, ":") {
		return pod.Status.PodIP
	}
	for _, ip := range pod.Status.PodIPs {
		if !strings.Contains(ip.IP, ":") {
			return ip.IP
		}
	}
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return ""
}

// resolve finds the pod's ENI: from what is already known (the ledger's
// ENI ID, the inventory, earlier lookups) and else with a batched lookup.
func (r *Reconciler) resolve(ctx context.Context, key, ip string, rec Record, hasRec bool) (ec2.ENI, error) {
	if r.opts.EnableENICache && r.inventory && !r.ec2.Synced(InventoryScope) {
		// Until the first inventory is read, every pod would miss and
		// look its address up, fetching what the inventory is about to
		// bring (at 100,000 pods, 91 lookups beside its 100 pages): wait
		// for it instead. Fresh joins the read under way (or makes it),
		// so this costs no call; a failed read leaves the lookup below.
		_ = r.ec2.Fresh(ctx, InventoryScope, missRefreshMaxAge)
	}
	if r.opts.EnableENICache {
		if hasRec {
			if e, ok := r.ec2.ENI(rec.ENI); ok && e.Holds(ip) {
				r.metrics.cache.WithLabelValues("hit").Inc()
				return e, nil
			}
		}
		if e, ok := r.ec2.ENIByIP(ip); ok {
			r.metrics.cache.WithLabelValues("hit").Inc()
			return e, nil
		}
	}
	e, err := r.lookupByIP(ctx, key, ip)
	if errors.Is(err, errLookupPending) {
		return e, err
	}
	r.metrics.cache.WithLabelValues("miss").Inc()
	if err != nil && ec2.IsNotFound(err) && r.inventory {
		// Addresses inside delegated prefixes are only found by the
		// inventory; a refresh now is one paginated read for everyone.
		if r.ec2.Fresh(ctx, InventoryScope, missRefreshMaxAge) == nil {
			if pe, ok := r.ec2.ENIByIP(ip); ok {
				return pe, nil
			}
		}
	}
	return e, err
}

// lookupByIP looks the address up off the reconcile workers when the
// lookup stage runs (errLookupPending until its result is in).
func (r *Reconciler) lookupByIP(ctx context.Context, key, ip string) (ec2.ENI, error) {
	if r.lookups == nil {
		return r.ec2.LookupByIP(ctx, ip)
	}
	return r.lookups.get(ctx, key, ip)
}

// sharedDesired merges the tags of every pod on the same shared ENI.
func (r *Reconciler) sharedDesired(ctx context.Context, pod *corev1.Pod, eni ec2.ENI, asked map[string]string) (map[string]string, map[string]string, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.MatchingFields{nodeNameIndex: pod.Spec.NodeName}); err != nil {
		return nil, nil, err
	}
	self := client.ObjectKeyFromObject(pod).String()
	wants := map[string]map[string]string{self: asked}
	var peers []string
	for i := range pods.Items {
		p := &pods.Items[i]
		k := client.ObjectKeyFromObject(p).String()
		raw, ok := p.Annotations[r.opts.AnnotationKey]
		if k == self || !ok || p.DeletionTimestamp != nil || p.Spec.HostNetwork {
			continue
		}
		ip := podIP(p)
		if ip == "" || !eni.Holds(ip) || nodeAddress(eni, ip) {
			continue
		}
		tags, err := ParseAnnotation(raw)
		if err == nil {
			tags, err = r.policy.Desired(p.Namespace, tags)
		}
		if err != nil {
			continue // that pod reports its own problem
		}
		wants[k] = tags
		peers = append(peers, k)
	}
	merged, conflicts := MergeShared(wants)
	if len(conflicts) > 0 {
		for _, k := range peers {
			r.requeue(k) // so the other side of a conflict learns of it too
		}
	}
	// Keys other pods asked for that conflict with nobody are written;
	// keys in conflict stay as they are.
	return merged, conflicts, nil
}

// writeTags is the first stage of the writer's job for one pod: the
// plan's AWS writes. A failed write is returned for the pod's next
// reconcile to report.
func (r *Reconciler) writeTags(ctx context.Context, w *podWork) error {
	if err := r.write(ctx, w.eni, w.plan); err != nil {
		return err
	}
	w.wrote = true
	return nil
}

// recordWrite is the second stage: the record of a successful write, so
// a change costs one reconcile. A record that fails (the pod changed
// meanwhile) is left to the next reconcile, which finds the tags on the
// ENI and records them.
func (r *Reconciler) recordWrite(ctx context.Context, w *podWork) {
	if r.leaving(ctx, &w.pod) {
		// Time passed since the plan: the pod may have gone meanwhile.
		r.recordInLedger(w)
		return
	}
	if err := r.record(ctx, w); err != nil {
		log.FromContext(ctx).V(1).Info("recording a write failed; the next reconcile records it", "pod", w.key, "error", bounded.Error(err))
		r.requeue(w.key)
		return
	}
	if len(w.own) > 0 {
		r.recent.note(w.key, w.pod.UID, w.plan.Hash, time.Now())
	}
}

func (r *Reconciler) write(ctx context.Context, eni ec2.ENI, plan Plan) error {
	var errs []error
	if len(plan.Create) > 0 {
		r.metrics.writes.WithLabelValues("create").Inc()
		if err := r.ec2.CreateTags(ctx, eni.ID, plan.Create); err != nil {
			errs = append(errs, err)
		}
	}
	if len(plan.Delete) > 0 && len(errs) == 0 {
		r.metrics.writes.WithLabelValues("delete").Inc()
		if err := r.ec2.DeleteTags(ctx, eni.ID, plan.Delete); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// forget removes the tags recorded for a pod that no longer exists (or
// whose name a new pod took) and drops its record. Tags other pods on a
// shared ENI still want stay.
func (r *Reconciler) forget(ctx context.Context, key string) error {
	r.dropLimiter(key)
	r.warned.clear(key)
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
	maps.DeleteFunc(remove, func(k, _ string) bool { return reserved(k) }) // never ours to remove; the token is added below
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
	r.release(rec.ENI)
	log.FromContext(ctx).Info("removed the tags of a pod that is gone", "eni", rec.ENI, "tags", len(remove))
	return nil
}

// finish handles a pod that is terminating or done: its tags go, then
// its finalizer.
func (r *Reconciler) finish(ctx context.Context, pod *corev1.Pod, key string) error {
	if r.writer.busy(key) {
		// Its end requeues the pod; the finalizer must wait for the
		// record of what that write applied.
		return nil
	}
	if r.recoverRecord(ctx, pod, key) {
		// The ENI's lookup runs off the workers; its result requeues
		// the pod. Releasing it now would leave its tags behind.
		return nil
	}
	if err := r.forget(ctx, key); err != nil {
		r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonAWSError, "Cleanup", "%s", errorText(err))
		return err
	}
	return r.dropFinalizer(ctx, pod)
}

// recoverRecord gives a pod that is going away its ledger record back
// from its last-applied annotations when the ledger has none: the record
// was lost in a crash before the ledger's batch was written. Only if the
// ENI that holds the pod's IP carries the token the annotations name —
// the tags are then the ones this operator wrote for the pod — so forget
// removes them instead of leaving them behind. It reports whether the
// ENI's lookup is still pending.
func (r *Reconciler) recoverRecord(ctx context.Context, pod *corev1.Pod, key string) (pending bool) {
	if _, ok := r.ledger.Get(key); ok || r.opts.DryRun || pod.Spec.HostNetwork {
		// A hostNetwork pod was never tagged: its last-applied
		// annotations are not worth an EC2 lookup of the node's address.
		return false
	}
	applied, hash := recordedTags(pod, Record{}, false)
	ip := podIP(pod)
	if len(applied) == 0 || hash == "" || ip == "" {
		return false
	}
	eni, err := r.resolve(ctx, key, ip, Record{}, false)
	if errors.Is(err, errLookupPending) {
		return true
	}
	if err != nil || eni.Tags[HashTag] != hash {
		return false
	}
	r.ledger.Put(Record{Pod: key, UID: string(pod.UID), ENI: eni.ID, Tags: applied, Hash: hash})
	return false
}

func (r *Reconciler) dropFinalizer(ctx context.Context, pod *corev1.Pod) error {
	if !controllerutil.ContainsFinalizer(pod, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(pod, Finalizer)
	return client.IgnoreNotFound(r.client.Patch(ctx, pod, patch))
}

// recordOnPod writes the last-applied annotations (k8s-eni-tagger's
// bookkeeping, kept so users can see and tools can read it) and, in
// finalizer mode, the finalizer — one metadata patch, only when needed.
func (r *Reconciler) recordOnPod(ctx context.Context, pod *corev1.Pod, applied map[string]string, hash string) error {
	orig := pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if len(applied) == 0 {
		delete(pod.Annotations, LastAppliedTagsAnnotation)
		delete(pod.Annotations, LastAppliedHashAnnotation)
		controllerutil.RemoveFinalizer(pod, Finalizer)
	} else {
		raw, _ := json.Marshal(applied)
		pod.Annotations[LastAppliedTagsAnnotation] = string(raw)
		pod.Annotations[LastAppliedHashAnnotation] = hash
		if r.opts.PodFinalizer {
			controllerutil.AddFinalizer(pod, Finalizer)
		}
	}
	if maps.Equal(orig.Annotations, pod.Annotations) && slices.Equal(orig.Finalizers, pod.Finalizers) {
		return nil
	}
	var opts []client.MergeFromOption
	if !slices.Equal(orig.Finalizers, pod.Finalizers) {
		// A merge patch replaces the whole finalizer list: without the
		// lock, a finalizer another controller added meanwhile would be
		// dropped. A conflict is retried with the pod as it is now.
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	return client.IgnoreNotFound(r.client.Patch(ctx, pod, client.MergeFromWithOptions(orig, opts...)))
}

// report sets the pod condition (only when it changes) and emits an event.
// The message is cut to bounded.Message whatever built it, so the
// condition, the event and the log line stay small.
func (r *Reconciler) report(ctx context.Context, pod *corev1.Pod, o outcome) error {
	o.message = bounded.Truncate(o.message, bounded.Message)
	r.metrics.outcomes.WithLabelValues(o.reason).Inc()
	key := client.ObjectKeyFromObject(pod).String()
	if o.reason != ReasonConflict {
		r.waiting.stop(key) // no longer waiting on another pod's tags
	}
	cond := corev1.PodCondition{Type: ConditionType, Status: o.status, Reason: o.reason, Message: o.message,
		ObservedGeneration: pod.Generation, LastTransitionTime: metav1.Now()}
	current := hasCondition(pod, cond)
	switch {
	case o.warning:
		// A repeated refusal is one event and one log line; one the pod's
		// condition already states (a restart) is none.
		if r.warned.first(key, string(pod.UID), o.reason, o.message) && !current {
			log.FromContext(ctx).Info(o.message, "reason", o.reason)
			r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, o.reason, "Tag", "%s", o.message)
		}
	default:
		r.warned.clear(key)
		if o.event {
			r.recorder.Eventf(pod, nil, corev1.EventTypeNormal, o.reason, "Tag", "%s", o.message)
		}
	}
	if current {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	// Server-side apply of this one condition: conditions are a map keyed
	// by type, so the kubelet's and others' conditions are never touched,
	// whatever the (trimmed) cached pod holds.
	apply := corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus().WithConditions(
		corev1ac.PodCondition().WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).WithMessage(cond.Message).
			WithObservedGeneration(cond.ObservedGeneration).WithLastTransitionTime(cond.LastTransitionTime)))
	err := r.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership)
	return client.IgnoreNotFound(err)
}

// hasCondition tells whether the pod's condition already says what cond
// says (its transition time aside).
func hasCondition(pod *corev1.Pod, cond corev1.PodCondition) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message && c.ObservedGeneration == cond.ObservedGeneration {
			return true
		}
	}
	return false
}

// clearCondition removes the pod's eni-tagger.io/tagged condition unless
// it is TagsRemoved (which stays true once the tags are gone). The
// condition is the operator's own server-side apply field: applying a
// status without it removes it, leaving every other condition as it is.
// A condition the operator does not own (written by an older version
// with another field manager) is removed by a JSON patch that first
// tests it is still the one read.
func (r *Reconciler) clearCondition(ctx context.Context, pod *corev1.Pod) error {
	idx := -1
	for i, c := range pod.Status.Conditions {
		if c.Type == ConditionType {
			idx = i
		}
	}
	if idx < 0 || pod.Status.Conditions[idx].Reason == ReasonRemoved {
		return nil
	}
	apply := corev1ac.Pod(pod.Name, pod.Namespace).WithStatus(corev1ac.PodStatus())
	if err := r.client.Status().Apply(ctx, apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.apiReader == nil {
		return nil
	}
	// The cache holds trimmed pods: the index of the condition is read
	// from the server.
	var fresh corev1.Pod
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(pod), &fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	for i, c := range fresh.Status.Conditions {
		if c.Type != ConditionType || c.Reason == ReasonRemoved {
			continue
		}
		ops, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/status/conditions/%d/type", i), "value": ConditionType},
			{"op": "remove", "path": fmt.Sprintf("/status/conditions/%d", i)},
		})
		return client.IgnoreNotFound(r.client.Status().Patch(ctx, &fresh, client.RawPatch(types.JSONPatchType, ops)))
	}
	return nil
}

func (r *Reconciler) awsFailure(ctx context.Context, pod *corev1.Pod, what string, err error) error {
	reason, hint := ReasonAWSError, "retrying with backoff"
	if ec2.IsUnauthorized(err) {
		hint = "the operator's IAM policy lacks a permission (docs/iam.md); retrying with backoff"
	}
	_ = r.report(ctx, pod, outcome{status: corev1.ConditionFalse, reason: reason,
		message: fmt.Sprintf("%s failed (%s): %s; %s", what, bounded.Truncate(ec2.Code(err), bounded.Quote), errorText(err), hint), event: true, warning: true})
	return err
}

// rateLimited applies --pod-rate-limit-qps to AWS writes and returns how
// long to wait, 0 when the write may go ahead.
func (r *Reconciler) rateLimited(key string) time.Duration {
	if r.opts.PodRateLimitQPS <= 0 {
		return 0
	}
	r.limitMu.Lock()
	l, ok := r.limiters[key]
	if !ok {
		l = rate.NewLimiter(rate.Limit(r.opts.PodRateLimitQPS), r.opts.PodRateLimitBurst)
		r.limiters[key] = l
	}
	r.limitMu.Unlock()
	res := l.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d
	}
	return 0
}

func (r *Reconciler) dropLimiter(key string) {
	r.limitMu.Lock()
	delete(r.limiters, key)
	r.limitMu.Unlock()
	r.recent.forget(key)
	r.waiting.stop(key)
	if r.lookups != nil {
		r.lookups.forget(key)
	}
}

// requeue asks for a reconcile of a pod by key.
func (r *Reconciler) requeue(key string) { r.queue.add(key) }

// release requeues the pods waiting in Conflict on an ENI whose record
// was just removed, with its tags: the ENI may be theirs to tag now. The
// inventory would not bring them back, as they have no record of their
// own.
func (r *Reconciler) release(eni string) {
	for _, key := range r.waiting.release(eni) {
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
	for _, key := range r.waiting.pods() {
		r.requeue(key)
	}
	r.sweep(ctx)
}

// sweep requeues ledger records whose pod no longer exists.
func (r *Reconciler) sweep(ctx context.Context) {
	for _, rec := range r.ledger.All() {
		ns, name, _ := strings.Cut(rec.Pod, "/")
		var pod corev1.Pod
		err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pod)
		if apierrors.IsNotFound(err) || (err == nil && string(pod.UID) != rec.UID) {
			r.requeue(rec.Pod)
		}
	}
}
