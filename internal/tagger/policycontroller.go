package tagger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// +kubebuilder:rbac:groups=networking.k8s.aws,resources=enitagpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=enitagpolicies/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get

// statusInterval is how often the policies whose figures changed get
// their status written: under a burst of 10,000 pods, once per policy per
// interval rather than once per pod.
const statusInterval = 5 * time.Second

// maxStatusProblems bounds the pods' problems a policy's Ready condition
// quotes.
const maxStatusProblems = 3

// policyController compiles the cluster's ENITagPolicies into the
// tagger's Policies, reports each one's status, and brings the pods a
// change may affect to a reconcile (the sweeper). The pods' tags are the
// pod reconciler's alone.
type policyController struct {
	client   client.Client
	policies *Policies
	tally    *policyTally
	sweeper  *sweeper
	queue    podQueue
	// swept is the generation of each policy last swept, so a status
	// write or a resync does not list its pods again.
	mu    sync.Mutex
	swept map[string]int64
	// clock times the list's retries.
	clock clock.WithTicker
}

// addPolicyController adds the policy controller and its sweeper to
// mgr; requeue brings a pod back to the pod reconciler.
func addPolicyController(mgr manager.Manager, o Options, apiReader client.Reader, tally *policyTally, requeue func(key string)) error {
	o.Policies.namespaces = mgr.GetCache()
	s := newSweeper(apiReader, o.Policies, tally, requeue, o.WatchNamespace)
	pc := &policyController{client: mgr.GetClient(), policies: o.Policies, tally: tally, sweeper: s, swept: map[string]int64{}, clock: o.Clock}
	if err := mgr.Add(s); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return pc.loadAll(ctx, mgr.GetCache())
	})); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := o.Clock.NewTicker(statusInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
				for _, name := range tally.takeChanged() {
					pc.queue.addName(name)
				}
			}
		}
	})); err != nil {
		return err
	}
	namespace := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	return builder.ControllerManagedBy(mgr).
		Named(o.ControllerName+"-policies").
		For(&v1alpha1.ENITagPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(pc.queue.source()).
		// A namespace's labels are read by selectors and expressions: a
		// change sweeps its pods. The namespaces' cache is also what the
		// pod transform and the reconciler read.
		WatchesMetadata(namespace, handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if o.Policies.active() && !equality.Semantic.DeepEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
				s.add(sweepNamespace + e.ObjectNew.GetName())
			}
		}}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &o.SkipNameValidation}).
		Complete(pc)
}

// Reconcile compiles one policy, applies it and reports its status.
func (pc *policyController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p v1alpha1.ENITagPolicy
	if err := pc.client.Get(ctx, req.NamespacedName, &p); apierrors.IsNotFound(err) {
		if old := pc.policies.put(req.Name, nil); old != nil {
			pc.policies.changed()
			// Its pods lose its tags: exactly those it wrote (the
			// ledger's record of each pod).
			pc.sweeper.add(sweepPolicy + req.Name)
			log.FromContext(ctx).Info("tag policy deleted; its tags are removed from its pods' ENIs", "policy", req.Name)
		}
		pc.mu.Lock()
		delete(pc.swept, req.Name)
		pc.mu.Unlock()
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	compiled, compileErr := pc.policies.compiler.Compile(p.Name, p.Spec)
	pc.policies.put(p.Name, compiled)
	pc.mu.Lock()
	sweep := pc.swept[p.Name] != p.Generation
	pc.swept[p.Name] = p.Generation
	pc.mu.Unlock()
	if sweep {
		pc.sweeper.add(sweepPolicy + p.Name)
		pc.policies.changed()
	}
	return reconcile.Result{}, pc.writeStatus(ctx, &p, compiled, compileErr)
}

// loadAll compiles the policies the cluster has once the cache holds
// them, before any pod is reconciled (Policies.waitLoaded).
func (pc *policyController) loadAll(ctx context.Context, c cache.Cache) error {
	var list v1alpha1.ENITagPolicyList
	for {
		if !c.WaitForCacheSync(ctx) {
			return nil
		}
		err := c.List(ctx, &list)
		if err == nil {
			break
		}
		log.FromContext(ctx).Error(err, "listing the ENITagPolicies; retrying")
		retry := pc.clock.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			retry.Stop()
			return nil
		case <-retry.C():
		}
	}
	for i := range list.Items {
		p := &list.Items[i]
		compiled, _ := pc.policies.compiler.Compile(p.Name, p.Spec)
		pc.policies.put(p.Name, compiled)
	}
	pc.policies.markLoaded()
	pc.policies.changed()
	return nil
}

// writeStatus reports the policy's figures and its Ready condition, only
// when they change.
func (pc *policyController) writeStatus(ctx context.Context, p *v1alpha1.ENITagPolicy, compiled *tagpolicy.Policy, compileErr error) error {
	counts, problems := pc.tally.countsOf(p.Name, maxStatusProblems)
	forNodes := compiled != nil && compiled.ForNodes()
	st := p.Status.DeepCopy()
	st.ObservedGeneration = p.Generation
	st.MatchedPods, st.TaggedPods, st.RefusedPods = int32(counts.matched), int32(counts.tagged), int32(counts.refused)
	meta.SetStatusCondition(&st.Conditions, readyCondition(p.Generation, counts, problems, forNodes, compileErr))
	if equality.Semantic.DeepEqual(st, &p.Status) {
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Status = *st
	return client.IgnoreNotFound(pc.client.Status().Patch(ctx, p, patch))
}

// readyCondition says whether the policy applies, and the first problems
// of its pods.
func readyCondition(generation int64, c policyCounts, problems []string, forNodes bool, compileErr error) metav1.Condition {
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: v1alpha1.TagPolicyReasonValid, ObservedGeneration: generation}
	if compileErr != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.TagPolicyReasonInvalidTag
		var re *tagpolicy.RuleError
		if errors.As(compileErr, &re) {
			cond.Reason = re.Reason
		}
		cond.Message = bounded.Truncate(fmt.Sprintf("%v; the pods it selects (%d) are refused and their ENIs' tags left as they are until it is fixed", compileErr, c.matched), bounded.Message)
		return cond
	}
	cond.Message = fmt.Sprintf("selects %d pods: %d tagged, %d refused", c.matched, c.tagged, c.refused)
	if forNodes {
		cond.Message = "tags the NodeENI interfaces of the nodes it selects (the NodeENIs' status and the operator's log tell their progress)"
	}
	if len(problems) > 0 {
		cond.Message += "; " + strings.Join(problems, "; ")
	}
	cond.Message = bounded.Truncate(cond.Message, bounded.Message)
	return cond
}

// addName requeues a cluster-scoped object by name.
func (q *podQueue) addName(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queue != nil {
		q.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}
