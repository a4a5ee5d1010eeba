package readiness

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis;eninodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ReasonInterfacesReady is the event on a node whose taint was lifted.
const ReasonInterfacesReady = "InterfacesReady"

// Options tune the readiness taint controller.
type Options struct {
	// SkipNameValidation lets tests start it in several managers.
	SkipNameValidation bool
}

type reconciler struct {
	client   client.Client
	recorder events.EventRecorder
}

// pass is one node's reconcile.
type pass struct {
	node    *corev1.Node
	waits   []string
	removed bool
}

// Setup adds the readiness taint controller to the manager (leader only).
func Setup(mgr ctrl.Manager, o Options) error {
	r := &reconciler{client: mgr.GetClient(), recorder: eventrecorder.Bounded(mgr.GetEventRecorder("eni-operator-readiness"))}
	co := controller.Options{}
	if o.SkipNameValidation {
		co.SkipNameValidation = &o.SkipNameValidation
	}
	onlyTainted := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		n, ok := obj.(*corev1.Node)
		return ok && tainted(n)
	})
	return ctrl.NewControllerManagedBy(mgr).Named("readiness-taint").WithOptions(co).
		For(&corev1.Node{}, builder.WithPredicates(onlyTainted)).
		Watches(&v1alpha1.ENINode{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		})).
		Watches(&v1alpha1.NodeENI{}, handler.EnqueueRequestsFromMapFunc(r.taintedNodes)).
		Complete(r)
}

// taintedNodes queues every node still tainted: a NodeENI's change may
// be what one waits for, or make it select one.
func (r *reconciler) taintedNodes(ctx context.Context, _ client.Object) []reconcile.Request {
	var list corev1.NodeList
	if err := r.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if tainted(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &pass{}
	if s := phases.Run(ctx, p,
		func(ctx context.Context, p *pass) *phases.Stop { return r.read(ctx, req.Name, p) },
		r.lift, r.report); s != nil {
		return s.Result, s.Err
	}
	return reconcile.Result{}, nil
}

// read gathers the node, the NodeENIs and the node's ENINode, and what
// the node waits for.
func (r *reconciler) read(ctx context.Context, name string, p *pass) *phases.Stop {
	p.node = &corev1.Node{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, p.node); err != nil || !tainted(p.node) {
		return phases.Done(client.IgnoreNotFound(err))
	}
	var nes v1alpha1.NodeENIList
	if err := r.client.List(ctx, &nes); err != nil {
		return phases.Done(err)
	}
	en := &v1alpha1.ENINode{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, en); err != nil && !apierrors.IsNotFound(err) {
		return phases.Done(err)
	}
	p.waits = waiting(p.node, nes.Items, en)
	return nil
}

// lift removes the taint, under an optimistic lock so that a taint
// another controller changed meanwhile is not lost.
func (r *reconciler) lift(ctx context.Context, p *pass) *phases.Stop {
	if len(p.waits) > 0 {
		return nil
	}
	old := p.node.DeepCopy()
	p.node.Spec.Taints = slices.DeleteFunc(p.node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
	if err := r.client.Patch(ctx, p.node, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
		return phases.Done(err)
	}
	p.removed = true
	return nil
}

func (r *reconciler) report(ctx context.Context, p *pass) *phases.Stop {
	lg := log.FromContext(ctx).WithValues("node", p.node.Name)
	if !p.removed {
		lg.V(1).Info("readiness taint kept", "waiting", bounded.Truncate(strings.Join(p.waits, "; "), bounded.Message))
		return nil
	}
	r.recorder.Eventf(p.node, nil, corev1.EventTypeNormal, ReasonInterfacesReady, "RemoveTaint",
		"every NodeENI selecting the node has its interfaces attached and configured: taint %s removed", TaintKey)
	lg.Info("readiness taint removed: the node's NodeENI interfaces are attached and configured", "taint", TaintKey)
	return nil
}
