package tagger

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger/podcache"
)

// RequiredIAMActions are the EC2 permissions the tagger needs; the
// operator checks them at start (ec2.PermissionCheck).
func RequiredIAMActions() []string {
	return []string{"ec2:DescribeNetworkInterfaces", "ec2:CreateTags", "ec2:DeleteTags"}
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;patch,resourceNames=eni-tagger-cache-00;eni-tagger-cache-01;eni-tagger-cache-02;eni-tagger-cache-03;eni-tagger-cache-04;eni-tagger-cache-05;eni-tagger-cache-06;eni-tagger-cache-07;eni-tagger-cache-08;eni-tagger-cache-09;eni-tagger-cache-10;eni-tagger-cache-11;eni-tagger-cache-12;eni-tagger-cache-13;eni-tagger-cache-14;eni-tagger-cache-15,namespace=eni-operator
// k8s-eni-tagger's cache, imported once and never changed (import.go).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get,resourceNames=eni-tagger-cache,namespace=eni-operator
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// maxInFlight is the controller's workers: the pods reconciled at once,
// most of them waiting without a slot (slots.go) for a batched ENI
// lookup, a batched tag write or the Kubernetes API's budget. Pods
// waiting together share batched calls, so the bound is set well above
// one batch; --max-concurrent-reconciles bounds the rest.
const maxInFlight = 2048

// Setup adds the pod tagger to mgr: the controller, the ledger and its
// inventory scope in the EC2 state (which the caller adds to mgr). It
// returns the reconciler for tests and one-shot commands.
func Setup(mgr manager.Manager, state *ec2.State, o Options) (*Reconciler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Policies == nil {
		var err error
		if o.Policies, err = NewPolicies(o.DefaultTags); err != nil {
			return nil, err
		}
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	ledger := NewLedger(direct, LedgerOptions{Namespace: o.Namespace, Name: o.LedgerName, Shards: o.LedgerShards,
		BatchInterval: o.LedgerBatchInterval, BatchSize: o.LedgerBatchSize, MemoryOnly: !o.PersistLedger, Clock: o.Clock})
	r := newReconciler(mgr, state, o, ledger)
	ledger.o.OnFlush = func(shard, records, bytes, overflow int) {
		r.metrics.ledgerOps.WithLabelValues("written").Inc()
		r.metrics.ledgerOps.WithLabelValues("overflow").Add(float64(overflow))
		r.metrics.shardBytes.WithLabelValues(fmt.Sprint(shard)).Set(float64(bytes))
	}
	if err := mgr.Add(ledger); err != nil {
		return nil, err
	}
	if err := mgr.Add(pruneEvery(r.pods, r.opts.Clock, pruneInterval)); err != nil {
		return nil, err
	}

	if err := r.revisits.watchInventory(mgr, state, r.opts); err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		im := &importer{ledger: ledger, ec2: r.ec2, inventory: r.inventory, apiReader: r.apiReader, subnets: r.subnets,
			namespace: r.opts.WatchNamespace, dryRun: r.opts.DryRun, clock: r.opts.Clock, forget: r.forget}
		im.importOriginalCache(ctx)
		return nil
	})); err != nil {
		return nil, err
	}

	if err := addPolicies(mgr, r); err != nil {
		return nil, err
	}

	if o.AllowSharedENITagging {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, nodeNameIndex, func(obj client.Object) []string {
			if p, ok := podcache.AsPod(obj); ok {
				return []string{p.Spec.NodeName}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}

	return r, builder.ControllerManagedBy(mgr).
		Named(o.ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podPredicate(r.opts, r.ledger))).
		WatchesRawSource(r.queue.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(maxInFlight, o.MaxConcurrentReconciles), SkipNameValidation: &o.SkipNameValidation}).
		Complete(r)
}

// newReconciler builds the Reconciler and the small types it runs.
func newReconciler(mgr manager.Manager, state *ec2.State, o Options, ledger *Ledger) *Reconciler {
	r := &Reconciler{
		client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), ec2: state, inventory: o.InventoryInterval > 0, ledger: ledger, opts: o, policy: o.policy(),
		recorder: eventrecorder.Bounded(mgr.GetEventRecorder("eni-operator-tagger")),
		subnets:  map[string]bool{}, pods: newPods(), tally: newPolicyTally(), policyReads: policyReads{owners: newOwners(mgr.GetAPIReader()), nodes: mgr.GetClient()},
		slots: newSlots(o.MaxConcurrentReconciles),
	}
	for _, s := range o.SubnetIDs {
		r.subnets[s] = true
	}
	r.metrics = newMetrics(o.Registerer, ledger)
	r.shared = sharedENIPods{client: r.client, annotationKey: o.AnnotationKey, policy: r.policy, requeue: r.queue.add}
	r.tags = tagWriter{ec2: r.ec2, writes: r.metrics.writes}
	r.turns = newTurns(o.KubeAPIQPS, o.KubeAPIBurst)
	r.finder = eniFinder{ec2: r.ec2, inventory: r.inventory, fromMemory: o.ResolveFromMemory, lookups: r.metrics.resolved}
	r.onPod = podWriter{client: r.client, apiReader: r.apiReader, recorder: r.recorder, outcomes: r.metrics.outcomes,
		pods: r.pods, finalizer: o.PodFinalizer, clock: o.Clock}
	r.revisits = revisits{ledger: ledger, ec2: r.ec2, pods: r.pods, client: r.client, requeue: r.queue.add,
		annotationKey: o.AnnotationKey, sharedENIs: o.AllowSharedENITagging, drift: r.metrics.drift}
	return r
}

// addPolicies adds the policy controller when tag policies are on and
// served; otherwise no pod waits for policies.
func addPolicies(mgr manager.Manager, r *Reconciler) error {
	on, err := tagPoliciesServed(mgr, r.opts.TagPolicies)
	switch {
	case err != nil:
		return err
	case on:
		return addPolicyController(mgr, r.opts, r.apiReader, r.tally, r.queue.add)
	}
	r.opts.Policies.markLoaded()
	return nil
}

// tagPoliciesServed tells whether to apply ENITagPolicies: asked for and
// the CRD installed. Without the CRD the tagger runs as before, and says
// so, rather than failing to start (a manifest install that predates
// the CRD).
func tagPoliciesServed(mgr manager.Manager, wanted bool) (bool, error) {
	if !wanted {
		return false, nil
	}
	gvk := v1alpha1.GroupVersion.WithKind("ENITagPolicy")
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		mgr.GetLogger().Error(err, "tag policies are OFF: the ENITagPolicy CRD is not installed; install it (the chart's crds/, config/crd) and restart, or set --enable-tag-policies=false to silence this")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("finding the ENITagPolicy API: %w", err)
	}
	return true, nil
}

// Ledger returns the reconciler's ledger (tests and one-shot commands).
func (r *Reconciler) Ledger() *Ledger { return r.ledger }

// podPredicate lets through only pods the tagger has business with, and
// only changes it reacts to, so unannotated pods cost no reconcile and
// the operator's own writes do not bring a pod back.
func podPredicate(o Options, ledger *Ledger) predicate.Funcs {
	relevant := func(obj client.Object) bool {
		if o.WatchNamespace != "" && obj.GetNamespace() != o.WatchNamespace {
			return false
		}
		a := obj.GetAnnotations()
		_, annotated := a[o.AnnotationKey]
		_, applied := a[LastAppliedTagsAnnotation]
		if annotated || applied || controllerutil.ContainsFinalizer(obj, Finalizer) {
			return true
		}
		if staleCondition(podConditions(obj)) {
			// A condition whose cause may be gone (the annotation removed
			// while the operator was down, a dry run that has ended):
			// the reconcile removes it.
			return true
		}
		if _, recorded := ledger.Get(client.ObjectKeyFromObject(obj).String()); recorded {
			return true
		}
		// A pod a tag policy selects, labelled or not. A stub is a pod
		// the cache judged unselected; a policy's sweep brings it.
		if _, stub := obj.(*metav1.PartialObjectMetadata); stub {
			return false
		}
		return o.Policies.selects(context.Background(), obj.GetNamespace(), obj.GetLabels())
	}
	fingerprint := func(p *corev1.Pod) string {
		ips := make([]string, 0, len(p.Status.PodIPs))
		for _, ip := range p.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return fmt.Sprint(p.Annotations[o.AnnotationKey], "|", p.Status.PodIP, ips, "|", p.Status.Phase, "|",
			p.DeletionTimestamp != nil, "|", p.UID, "|", controllerutil.ContainsFinalizer(p, Finalizer), "|", p.Spec.NodeName, "|",
			labels.Set(p.Labels).String())
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return relevant(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return relevant(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !relevant(e.ObjectOld) && !relevant(e.ObjectNew) {
				return false
			}
			// The cache holds podcache.Pods.
			oldPod, ok1 := podcache.AsPod(e.ObjectOld)
			newPod, ok2 := podcache.AsPod(e.ObjectNew)
			if !ok1 || !ok2 {
				return true
			}
			_, hadAnno := oldPod.Annotations[o.AnnotationKey]
			_, hasAnno := newPod.Annotations[o.AnnotationKey]
			return hadAnno != hasAnno || fingerprint(oldPod) != fingerprint(newPod)
		},
		GenericFunc: func(e event.GenericEvent) bool { return true },
	}
}

// staleCondition reports whether a pod carries the tagger's condition
// with a reason other than TagsRemoved (the one condition that stays on a
// pod with nothing asked and nothing applied).
func staleCondition(conditions []corev1.PodCondition) bool {
	for _, c := range conditions {
		if c.Type == ConditionType && c.Reason != ReasonRemoved {
			return true
		}
	}
	return false
}

// podConditions returns the conditions of a cached pod (a Pod or a
// podcache.Pod; none for a stub), without copying it.
func podConditions(obj client.Object) []corev1.PodCondition {
	switch p := obj.(type) {
	case *corev1.Pod:
		return p.Status.Conditions
	case *podcache.Pod:
		return p.Conditions
	}
	return nil
}

// RemoveFinalizers takes the tagger's finalizer off every pod — the
// uninstall path of --pod-finalizer mode, so no pod is left stuck in
// Terminating once the operator is gone. It returns how many pods it
// changed.
func RemoveFinalizers(ctx context.Context, c client.Client) (int, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return 0, err
	}
	n := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if !controllerutil.ContainsFinalizer(p, Finalizer) {
			continue
		}
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(p, Finalizer)
		if err := c.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("removing the finalizer of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		n++
	}
	return n, nil
}
