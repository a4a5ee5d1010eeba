package attachdefs

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
)

// Options configure the controller. Zero values mean the defaults.
type Options struct {
	// RecheckInterval is how often a NodeENI is looked at again while
	// Multus' CRD is not installed, a namespace is missing or someone
	// else's definition holds a name (1 minute).
	RecheckInterval time.Duration
	// SkipNameValidation allows several managers with this controller in
	// one process (tests).
	SkipNameValidation bool
}

// Setup adds the controller to mgr; it runs on the leader only. It starts
// without Multus installed: the watch of the definitions begins the first
// time a reconcile finds their CRD served (crdWatch).
func Setup(mgr ctrl.Manager, o Options) error {
	if o.RecheckInterval <= 0 {
		o.RecheckInterval = time.Minute
	}
	r := &reconciler{
		client: mgr.GetClient(), defs: mgr.GetCache(), live: mgr.GetAPIReader(),
		recorder: eventrecorder.Bounded(mgr.GetEventRecorder("eni-operator-attachdefs")),
		recheck:  o.RecheckInterval,
	}
	co := controller.Options{MaxConcurrentReconciles: 2}
	if o.SkipNameValidation {
		co.SkipNameValidation = &o.SkipNameValidation // unset, the manager's setting holds
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("attachdefs").
		For(&v1alpha1.NodeENI{}, builder.WithPredicates(nodeENIChanged())).
		WithOptions(co).
		Build(r)
	if err != nil {
		return err
	}
	// A change to or deletion of a definition wakes its NodeENI, which
	// writes it back.
	owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.NodeENI{}, handler.OnlyControllerOwner())
	r.crd = &crdWatch{mapper: mgr.GetRESTMapper(), watch: func() error {
		return c.Watch(source.Kind(mgr.GetCache(), client.Object(newObject()), owner))
	}}
	return nil
}

// crdWatch tells whether the API server serves NetworkAttachmentDefinitions
// and starts the controller's watch of them the first time it does: a
// watch of a kind not served would fail the controller's start, and
// Multus may well be installed after the operator.
type crdWatch struct {
	mapper   meta.RESTMapper
	watch    func() error
	mu       sync.Mutex
	watching bool
}

func (w *crdWatch) served() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching {
		return true, nil
	}
	gvk := GroupVersionKind()
	// The manager's mapper asks the API server again for a group it
	// does not know.
	_, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := w.watch(); err != nil {
		return false, err
	}
	w.watching = true
	return true, nil
}

// nodeENIChanged passes the NodeENI updates that change its definitions
// or its report: the spec (generation), the resolved subnets, the pods'
// ranges reserved, and the
// AttachmentDefinitionsReady condition (someone else's write of the list
// may drop it). The other controllers' status writes do not.
func nodeENIChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeENI)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeENI)
			if !okOld || !okNew {
				return true
			}
			return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status.Subnets, n.Status.Subnets) ||
				!equality.Semantic.DeepEqual(o.Status.PodAddressReservations, n.Status.PodAddressReservations) ||
				!equality.Semantic.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionAttachmentDefinitionsReady),
					meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionAttachmentDefinitionsReady))
		},
	}
}
