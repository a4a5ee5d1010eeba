package nodeeni

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// Setup registers the NodeENI controller and the leaked-ENI collector
// with the manager and has the EC2 state keep the cluster's ENIs fresh.
// Both run on the leader only. The caller adds the state to the manager. The manager's
// scheme must include corev1 and v1alpha1 (AddToScheme).
func Setup(mgr ctrl.Manager, state *ec2.State, o Options) error {
	if o.ClusterName == "" {
		return errors.New("nodeeni: a cluster name is required: it tags and scopes the operator's ENIs (--cluster-name)")
	}
	if o.Keys == nil {
		return errors.New("nodeeni: an ownership key ring is required: it proves which ENIs are the operator's (--ownership-key-secret)")
	}
	trust, births := eniplan.TrustCheck{Cluster: o.ClusterName, Keys: o.Keys}, newBirths()
	o = o.withDefaults()
	if o.DisableController && o.DisableCollector {
		return nil
	}
	m := newMetrics(o.Registerer)
	distrusted := newDistrustLog()
	lg := mgr.GetLogger().WithName("nodeeni")
	if o.DryRun {
		lg.Info("dry run: the NodeENI controller and the ENI collector make no EC2 change (no create, attach, detach, delete, modify or tag); they report what they would do in status, events, logs and metrics",
			"controller", !o.DisableController, "collector", !o.DisableCollector)
	}
	// The cluster's ENIs: read every resync interval (one paginated call
	// for the cluster), indexed by their NodeENI.
	if err := state.Watch(ec2.Scope{Name: InventoryScope, Interval: o.ResyncInterval,
		Filters: []ec2.Filter{{Name: "tag:" + eniplan.TagCluster, Values: []string{o.ClusterName}}}}); err != nil {
		return err
	}
	state.IndexTag(eniplan.TagNodeENIUID)
	refreshed, err := state.Subscribe(InventoryScope)
	if err != nil {
		return err
	}
	resync := make(chan event.GenericEvent, 1)
	if o.TagPolicies != nil {
		// A policy's change may change any node's interfaces' tags.
		o.TagPolicies.OnChange(func() { recheckAll(resync) })
	}
	var col *collector
	if !o.DisableCollector {
		col = newCollector(mgr.GetClient(), state, o, m)
		col.trust, col.births, col.dryRun = trust, births, o.DryRun
		col.log = mgr.GetLogger().WithName("eni-collector")
		if err := mgr.Add(col); err != nil {
			return err
		}
	}
	onRefresh := refreshHandler{client: mgr.GetClient(), state: state, trust: trust, births: births, metrics: m,
		distrusted: distrusted, log: lg, collector: col, resync: resync}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return onRefresh.run(ctx, refreshed) })); err != nil {
		return err
	}
	if o.DisableController {
		return nil
	}
	watchEC2Health(state.Health(), resync, lg)
	r := &reconciler{
		client: mgr.GetClient(), ec2: state,
		opts: o, metrics: m,
		trust: trust, births: births, applied: newAppliedTags(), own: newOwnWrites(),
		live: mgr.GetAPIReader(),
	}
	events := eventrecorder.Bounded(mgr.GetEventRecorder("eni-operator-nodeeni"))
	r.report = reporter{recorder: events, distrusted: distrusted}
	r.eniNodes = eniNodes{client: r.client, live: r.live, ec2: state, births: births, shares: newOwnWrites(), clock: o.Clock}
	r.status = statusWriter{client: r.client, live: r.live, eniNodes: r.eniNodes, report: r.report, metrics: m, own: r.own,
		clock: o.Clock, agentGrace: o.AgentReportGracePeriod}
	r.adoption = &adopter{client: r.client, ec2: state, opts: o, trust: trust, report: r.report}
	r.exec = executor{ec2: state, metrics: m, recorder: events, trust: trust, births: births, answers: newAnswers(), applied: r.applied,
		eniNodes: r.eniNodes, cluster: o.ClusterName, parallel: o.MaxParallelNodes, clock: o.Clock}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ENINode{}, shareIndex, sharesIndexed); err != nil {
		return err
	}
	co := controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
	if o.SkipNameValidation {
		co.SkipNameValidation = &o.SkipNameValidation // unset, the manager's setting holds
	}
	return register(mgr, r, resync, co)
}

// refreshHandler is told of each refresh of the cluster's ENIs: it sets
// the gauges, reports ENIs that fail the trust check (once per reason),
// wakes the collector and re-checks every NodeENI.
type refreshHandler struct {
	client     client.Reader
	state      EC2
	trust      eniplan.TrustCheck
	births     *births
	metrics    *metrics
	distrusted *distrustLog
	log        logr.Logger
	collector  *collector
	resync     chan event.GenericEvent
}

func (h refreshHandler) run(ctx context.Context, refreshed <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-refreshed:
			h.refreshed(ctx)
		}
	}
}

func (h refreshHandler) refreshed(ctx context.Context) {
	all, _ := h.state.ENIsIn(InventoryScope)
	attached := 0
	for _, e := range all {
		if e.Attachment != nil {
			attached++
		}
	}
	h.metrics.managed.Set(float64(len(all)))
	h.metrics.attached.Set(float64(attached))
	// ENIs that carry the cluster's tag but fail the trust check are
	// never acted on; each is logged once per reason.
	ev, err := h.births.everyRecord(ctx, h.client)
	if err != nil {
		h.log.Error(err, "reading the ENINodes to count untrusted ENIs; counted at the next refresh")
	} else {
		h.countUntrusted(all, ev)
	}
	if h.collector != nil {
		h.collector.notify()
	}
	// Every NodeENI is re-checked against the new picture.
	recheckAll(h.resync)
}

// countUntrusted sets the trust gauges and logs each untrusted ENI once
// per reason.
func (h refreshHandler) countUntrusted(all []awstypes.ENI, ev eniplan.Evidence) {
	reasons, details := h.metrics.countUntrusted(all, h.trust, nodeENINames(h.client), ev)
	for _, id := range h.distrusted.update("inventory", reasons) {
		h.log.Info("ENI carries this cluster's ownership tag but fails the trust check; it is left alone",
			"eni", id, "reason", reasons[id], "detail", details[id])
	}
}

// recheckAll signals the controller to re-check every NodeENI, without
// waiting: a pending signal already covers this one.
func recheckAll(resync chan<- event.GenericEvent) {
	select {
	case resync <- event.GenericEvent{Object: &v1alpha1.NodeENI{}}:
	default:
	}
}

// register builds the controller: NodeENI changes that matter, node
// changes, and the resync channel (inventory refreshes, EC2 health)
// re-checking every NodeENI.
func register(mgr ctrl.Manager, r *reconciler, resync chan event.GenericEvent, co controller.Options) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &v1alpha1.NodeENIList{}
		if err := mgr.GetClient().List(ctx, list); err != nil {
			log.FromContext(ctx).Error(err, "listing NodeENIs to re-check")
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i, ne := range list.Items {
			out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: ne.Name}}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeeni").
		// Spec changes and deletion bump the generation; the operator's own
		// status writes do not and need no reconcile. Someone else's write
		// of the status passes, to be written back (first in the list: it
		// forgets deleted NodeENIs).
		For(&v1alpha1.NodeENI{}, builder.WithPredicates(predicate.Or[client.Object](
			ownStatusTampered(r.own), predicate.GenerationChangedPredicate{}))).
		// The agents' reports, and shares someone else changed, in the
		// ENINodes wake the NodeENIs the entries name.
		Watches(&v1alpha1.ENINode{}, handler.EnqueueRequestsFromMapFunc(nodeENIsOf), builder.WithPredicates(eniNodeChanged(r.eniNodes.shares))).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged())).
		WatchesRawSource(source.Channel(resync, all)).
		WithOptions(co).
		Complete(r)
}

// ownStatusTampered passes the updates that leave a NodeENI's status
// other than this process last wrote or planned it (ownWrites).
// Comparing old and new first keeps the digest off the updates of spec
// and metadata.
func ownStatusTampered(own *ownWrites) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			own.forget(e.Object.GetName())
			return false
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeENI)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeENI)
			if !okOld || !okNew {
				return true
			}
			return !equality.Semantic.DeepEqual(o.Status, n.Status) && own.foreign(n.Name, n.Status)
		},
	}
}

// nodeENINames maps the UIDs of the NodeENIs in the manager's cache to
// their names, so the trust check can compare an ENI's name tag with the
// NodeENI its UID tag names; empty when the cache cannot say (yet).
func nodeENINames(c client.Reader) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.NodeENIList{}
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	out := make(map[string]string, len(list.Items))
	for _, ne := range list.Items {
		out[string(ne.UID)] = ne.Name
	}
	return out
}

// nodeChanged passes the node events that can change what a NodeENI
// wants: creation, deletion, and changes of labels, provider ID or
// deletion state. Status heartbeats, the bulk of node updates, do not.
func nodeChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			if o == nil || n == nil {
				return true
			}
			return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || o.Spec.ProviderID != n.Spec.ProviderID ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
		},
	}
}

// withLogger puts a logger into a context that has none of its own.
func withLogger(ctx context.Context, l logr.Logger) context.Context {
	return log.IntoContext(ctx, l)
}
