package attachdefs

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/status,verbs=patch
// A controller reference blocks its owner's deletion, which the API server
// allows only to those who may update the owner's finalizers.
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// reconciler brings one NodeENI's definitions to what it wants and
// reports how that went in its AttachmentDefinitionsReady condition.
type reconciler struct {
	// client reads NodeENIs (cached) and writes.
	client client.Client
	// defs reads the definitions: the manager's cache, which the watch of
	// them fills; live reads past it, after a create found one there.
	defs, live client.Reader
	crd        *crdWatch
	recorder   recorder.EventRecorder
	// recheck is how soon a NodeENI is looked at again while something
	// outside it blocks a definition (CRD, namespace, someone else's
	// definition), none of which this controller watches.
	recheck time.Duration
}

// pass is one reconcile of a NodeENI.
type pass struct {
	req reconcile.Request
	ne  *v1alpha1.NodeENI
	// asks: spec.multus.attachmentDefinition is set.
	asks   bool
	served bool
	wanted []Definition
	// invalid says why the spec and subnets make no configuration.
	invalid error
	// ours are the NodeENI's definitions, by namespace/name.
	ours map[string]*unstructured.Unstructured
	out  passResult
}

// Reconcile admits the NodeENI, looks for the CRD, gathers what it wants
// and has, syncs, and reports.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &pass{req: req}
	if s := phases.Run(ctx, p, r.admit, r.lookForCRD, r.gather, r.sync, r.conclude); s != nil {
		return s.Result, bounded.Error(s.Err)
	}
	return reconcile.Result{}, nil
}

// admit reads the NodeENI. One that is gone or going needs nothing: the
// garbage collector deletes its definitions after it.
func (r *reconciler) admit(ctx context.Context, p *pass) *phases.Stop {
	ne := &v1alpha1.NodeENI{}
	if err := r.client.Get(ctx, p.req.NamespacedName, ne); err != nil {
		return phases.Done(client.IgnoreNotFound(err))
	}
	if !ne.DeletionTimestamp.IsZero() {
		return phases.Done(nil)
	}
	p.ne, p.asks = ne, attachmentDefinition(ne) != nil
	return nil
}

// lookForCRD ends the pass when Multus' CRD is not installed: a NodeENI
// that asks is told so and looked at again later; one that does not has
// no definitions to delete.
func (r *reconciler) lookForCRD(ctx context.Context, p *pass) *phases.Stop {
	served, err := r.crd.served()
	if err != nil {
		return phases.Done(err)
	}
	p.served = served
	if served {
		return nil
	}
	if err := r.report(ctx, p); err != nil {
		return phases.Done(err)
	}
	if p.asks {
		return phases.After(r.recheck)
	}
	return phases.Done(nil)
}

// gather computes the definitions wanted and lists those the NodeENI has
// (its label, and its controller reference: a label anyone can copy).
func (r *reconciler) gather(ctx context.Context, p *pass) *phases.Stop {
	p.wanted, p.invalid = Wanted(p.ne)
	list := newList()
	if err := r.defs.List(ctx, list, client.MatchingLabels{LabelNodeENI: p.ne.Name}); err != nil {
		return phases.Done(err)
	}
	p.ours = map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if u := &list.Items[i]; ownedBy(u, p.ne) {
			p.ours[u.GetNamespace()+"/"+u.GetName()] = u
		}
	}
	return nil
}

// sync writes the wanted definitions and deletes the NodeENI's others.
// While the wanted ones cannot be known (the spec makes no configuration,
// the subnets are not resolved yet), the existing ones are kept.
func (r *reconciler) sync(ctx context.Context, p *pass) *phases.Stop {
	if p.asks && (p.invalid != nil || len(p.ne.Status.Subnets) == 0) {
		return nil
	}
	wanted := map[string]bool{}
	for _, d := range p.wanted {
		wanted[d.Key()] = true
		r.apply(ctx, p, d)
	}
	for key, u := range p.ours {
		if wanted[key] {
			continue
		}
		uid := u.GetUID()
		err := r.client.Delete(ctx, u, client.Preconditions{UID: &uid})
		if err = client.IgnoreNotFound(err); err != nil {
			p.out.failures = append(p.out.failures, key+": deleting: "+err.Error())
		}
	}
	return nil
}

// apply creates or updates one definition, never over one the NodeENI
// does not own.
func (r *reconciler) apply(ctx context.Context, p *pass, d Definition) {
	u, ok := p.ours[d.Key()]
	if !ok {
		u = newObject()
		err := r.defs.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, u)
		switch {
		case apierrors.IsNotFound(err):
			r.create(ctx, p, d)
			return
		case err != nil:
			p.out.failures = append(p.out.failures, d.Key()+": "+err.Error())
			return
		}
	}
	r.update(ctx, p, d, u)
}

func (r *reconciler) create(ctx context.Context, p *pass, d Definition) {
	u := newObject()
	render(u, d, p.ne)
	err := r.client.Create(ctx, u)
	switch {
	case err == nil:
		p.out.written = append(p.out.written, d.Key())
	case apierrors.IsAlreadyExists(err):
		// Not in the cache yet: this controller's own create, or
		// someone else's.
		live := newObject()
		if err := r.live.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, live); err != nil {
			p.out.failures = append(p.out.failures, d.Key()+": "+err.Error())
			return
		}
		r.update(ctx, p, d, live)
	case namespaceNotFound(err):
		p.out.noNamespace(d.Namespace)
	default:
		p.out.failures = append(p.out.failures, d.Key()+": "+err.Error())
	}
}

// namespaceNotFound tells a create refused for want of its namespace
// from one refused because the kind is no longer served (Multus
// uninstalled): both are 404s.
func namespaceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// update brings u, found under d's name, to d when it is the NodeENI's,
// and reports a conflict when it is not.
func (r *reconciler) update(ctx context.Context, p *pass, d Definition, u *unstructured.Unstructured) {
	switch {
	case !ownedBy(u, p.ne):
		p.out.conflicts = append(p.out.conflicts, d.Key())
	case upToDate(u, d, p.ne):
	default:
		render(u, d, p.ne)
		// Update carries the resource version read: a write in between
		// fails it, and the retry starts from that write.
		if err := r.client.Update(ctx, u); err != nil {
			p.out.failures = append(p.out.failures, d.Key()+": "+err.Error())
			return
		}
		p.out.written = append(p.out.written, d.Key())
	}
}

// conclude reports, and says when to look again: soon after a failed
// write (with the controller's back-off), later while something outside
// the NodeENI blocks a definition.
func (r *reconciler) conclude(ctx context.Context, p *pass) *phases.Stop {
	if err := r.report(ctx, p); err != nil {
		return phases.Done(err)
	}
	switch {
	case len(p.out.failures) > 0:
		return phases.Done(errors.New(bounded.ListWithin(p.out.failures, "; ", bounded.Items, bounded.Message)))
	case len(p.out.conflicts) > 0 || len(p.out.missing) > 0:
		return phases.After(r.recheck)
	}
	return nil
}
