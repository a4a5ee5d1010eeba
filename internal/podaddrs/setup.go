package podaddrs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
)

// Options tune pod address registration.
type Options struct {
	// BatchDelay is how long a node's pass waits after a pod change, so a
	// burst of pods on one node makes one call per ENI.
	BatchDelay time.Duration
	// Resync is how often a node with registered addresses is checked
	// again without a change (an address unassigned behind the
	// operator's back is assigned again).
	Resync time.Duration
	// StatusInterval is the most often a NodeENI's condition is written.
	StatusInterval time.Duration
	// CatalogMaxAge is how old the VPC's subnets may be.
	CatalogMaxAge time.Duration
	// InventoryScope is the EC2 state's scope that holds the NodeENIs'
	// ENIs (nodeeni.InventoryScope): a node's pass waits for its first
	// refresh. Without it a pass after a start sees none of the node's
	// ENIs, does nothing and looks again only a Resync later.
	InventoryScope string
	// StartCheck is how often, until registration starts, the operator
	// looks for a NodeENI that asks for it.
	StartCheck time.Duration
	// MaxConcurrentReconciles is how many nodes are worked on at once.
	MaxConcurrentReconciles int
	// Namespace limits registration to the pods of one namespace (the
	// operator's --watch-namespace, whose RBAC lets it see no others).
	Namespace string
	// Registerer receives eni_operator_pod_addresses; nil leaves it
	// unregistered.
	Registerer prometheus.Registerer
	// SkipNameValidation lets tests start the controller in several
	// managers of one process.
	SkipNameValidation bool
	// Clock is what refusals' backoffs are timed by (the real clock when
	// nil).
	Clock clock.PassiveClock
	// Ticks runs the status writer's and the start check's tickers (the
	// real clock when nil): apart from Clock, so a test can step the
	// backoffs while conditions are written on time.
	Ticks clock.WithTicker
}

func (o Options) withDefaults() Options {
	if o.BatchDelay <= 0 {
		o.BatchDelay = 200 * time.Millisecond
	}
	if o.Resync <= 0 {
		o.Resync = 5 * time.Minute
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = 2 * time.Second
	}
	if o.CatalogMaxAge <= 0 {
		o.CatalogMaxAge = 10 * time.Minute
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.StartCheck <= 0 {
		o.StartCheck = 5 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Ticks == nil {
		o.Ticks = clock.RealClock{}
	}
	return o
}

// Setup adds pod address registration to the manager. Its pod informer
// and controller start only once a NodeENI has a multus section (or an
// ENINode still records addresses to release): a cluster without Multus
// pays no second watch of every pod. Everything runs on the leader only.
// The manager's scheme must hold corev1 and v1alpha1.
func Setup(mgr ctrl.Manager, e EC2, o Options) error {
	o = o.withDefaults()
	t := newTally()
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "eni_operator_pod_addresses",
		Help: "Multus pod addresses on the ENIs of each NodeENI with multus.registerPodAddresses, by state: registered (assigned on the ENI) and refused (see the PodAddressesRegistered condition)."},
		[]string{"nodeeni", "state"})
	if o.Registerer != nil {
		if err := o.Registerer.Register(gauge); err != nil {
			return err
		}
	}
	if err := mgr.Add(&statusWriter{client: mgr.GetClient(), tally: t, interval: o.StatusInterval, gauge: gauge, ticks: o.Ticks}); err != nil {
		return err
	}
	return mgr.Add(&starter{mgr: mgr, ec2: e, opts: o, tally: t, every: o.StartCheck})
}

// Reasons of the PodAddressesRegistered condition when this operator
// does not register.
const (
	ReasonRegistrationDisabled = "RegistrationDisabled"
	ReasonDryRun               = "DryRun"
)

// SetupOff is Setup for an operator that does not register addresses
// (reason: ReasonRegistrationDisabled or ReasonDryRun; message says why
// and what to do). A NodeENI that asks for registration is told so in
// its PodAddressesRegistered condition, instead of showing none. It
// watches no pod.
func SetupOff(mgr ctrl.Manager, reason, message string, interval time.Duration) error {
	if interval <= 0 {
		interval = Options{}.withDefaults().StatusInterval
	}
	return mgr.Add(&statusWriter{client: mgr.GetClient(), tally: newTally(), interval: interval, ticks: clock.RealClock{},
		off: &metav1.Condition{Type: v1alpha1.ConditionPodAddressesRegistered, Status: metav1.ConditionFalse, Reason: reason, Message: message}})
}

// starter waits until registration is needed, then starts the pod
// informer and the controller, once.
type starter struct {
	mgr   ctrl.Manager
	ec2   EC2
	opts  Options
	tally *tally
	every time.Duration
}

func (s *starter) NeedLeaderElection() bool { return true }

func (s *starter) Start(ctx context.Context) error {
	tick := s.opts.Ticks.NewTicker(s.every)
	defer tick.Stop()
	for {
		needed, err := s.needed(ctx)
		if err == nil && needed {
			return s.startController()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
	}
}

// needed lists the NodeENIs and ENINodes and says whether registration
// is needed.
func (s *starter) needed(ctx context.Context) (bool, error) {
	var nes v1alpha1.NodeENIList
	if err := s.mgr.GetClient().List(ctx, &nes); err != nil {
		return false, err
	}
	var ens v1alpha1.ENINodeList
	if err := s.mgr.GetClient().List(ctx, &ens); err != nil {
		return false, err
	}
	return registrationNeeded(nes.Items, ens.Items), nil
}

// registrationNeeded reports whether a NodeENI has a multus section (it
// registers pod addresses, or its pods may name the readiness gate and
// are to be told that it does not) or an ENINode records addresses
// (registration turned off while the operator was down: they are to be
// released).
func registrationNeeded(nes []v1alpha1.NodeENI, ens []v1alpha1.ENINode) bool {
	for i := range nes {
		if nes[i].Spec.Multus != nil {
			return true
		}
	}
	for _, en := range ens {
		if len(en.Spec.PodAddresses) > 0 {
			return true
		}
	}
	return false
}

func (s *starter) startController() error {
	o := s.opts
	byObject := cache.ByObject{Transform: keepMultusPods()}
	if o.Namespace != "" {
		byObject.Namespaces = map[string]cache.Config{o.Namespace: {}}
	}
	pods, err := cache.New(s.mgr.GetConfig(), cache.Options{Scheme: s.mgr.GetScheme(), Mapper: s.mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: byObject}})
	if err != nil {
		return err
	}
	if err := pods.IndexField(context.Background(), &corev1.Pod{}, podIndex, func(o client.Object) []string { return indexByNode(o) }); err != nil {
		return err
	}
	if err := s.mgr.Add(pods); err != nil {
		return err
	}
	r := &reconciler{client: s.mgr.GetClient(), pods: pods, ec2: s.ec2, opts: o, tally: s.tally, limits: newLimitMemo(), waits: newWaiters(), backoffs: newBackoffs(),
		recorder: eventrecorder.Bounded(s.mgr.GetEventRecorder("eni-operator-podaddrs")),
		records:  recordWriter{client: s.mgr.GetClient()}, calls: addressCalls{ec2: s.ec2}}
	co := controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles}
	if o.SkipNameValidation {
		co.SkipNameValidation = &o.SkipNameValidation
	}
	s.mgr.GetLogger().WithName("podaddrs").Info("a NodeENI has a multus section (pod addresses, readiness gate): watching pods")
	return ctrl.NewControllerManagedBy(s.mgr).Named("podaddrs").WithOptions(co).
		For(&v1alpha1.ENINode{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.NodeENI{}, handler.EnqueueRequestsFromMapFunc(r.nodesOf), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Kind[client.Object](pods, &corev1.Pod{}, podHandler(o.BatchDelay))).
		WatchesRawSource(source.Channel(r.waits.queue, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// podHandler queues a pod's node after delay, so the pods of a burst
// share the node's pass. An update queues the old object's node too: a
// pod whose network status went away is a stub now.
func podHandler(delay time.Duration) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...any) {
		for _, obj := range objs {
			if n := nodeOf(obj); n != "" {
				q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: n}}, delay)
			}
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}

// nodesOf queues every node with an ENI of a changed NodeENI (its
// registration may have been turned on or off).
func (r *reconciler) nodesOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.ENINodeList
	if err := r.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, en := range list.Items {
		for _, a := range en.Spec.Attachments {
			if a.NodeENI == obj.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: en.Name}})
				break
			}
		}
	}
	return out
}
