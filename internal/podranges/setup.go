package podranges

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded/eventrecorder"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// Options configure the reservations of the pods' ranges.
type Options struct {
	// ClusterName is the operator's --cluster-name, in every
	// reservation's tags and proof.
	ClusterName string
	// Keys sign and verify the reservations' proofs.
	Keys *ownership.KeyRing
	// Resync is how often a NodeENI's reservations are checked again
	// without a change (10 minutes).
	Resync time.Duration
	// CatalogMaxAge is how old the VPC's subnets may be (10 minutes).
	CatalogMaxAge time.Duration
	// Clock times the retries of a NodeENI whose reservations fail (the
	// real clock when nil).
	Clock clock.PassiveClock
	// DryRun makes no EC2 write: the condition says what would be done.
	DryRun bool
	// SkipNameValidation lets tests start the controller in several
	// managers of one process.
	SkipNameValidation bool
}

// The rights the reservations use (the NodeENI controller's role has
// them too).
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds the reservations' controller to mgr; it runs on the leader
// only.
func Setup(mgr ctrl.Manager, e EC2, o Options) error {
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.CatalogMaxAge <= 0 {
		o.CatalogMaxAge = 10 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	r := &reconciler{client: mgr.GetClient(), ec2: e, opts: o, recorder: eventrecorder.Bounded(mgr.GetEventRecorder("eni-operator-podranges"))}
	co := controller.Options{MaxConcurrentReconciles: 2}
	if o.SkipNameValidation {
		co.SkipNameValidation = &o.SkipNameValidation
	}
	return ctrl.NewControllerManagedBy(mgr).Named("podranges").WithOptions(co).
		For(&v1alpha1.NodeENI{}, builder.WithPredicates(rangeInputsChanged())).
		Complete(r)
}

// rangeInputsChanged passes the NodeENI updates a reservation depends
// on: the spec, the deletion, the resolved subnets and the recorded
// reservations; not the other controllers' conditions.
func rangeInputsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeENI)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeENI)
			if !okOld || !okNew {
				return true
			}
			return o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
				!equality.Semantic.DeepEqual(o.Status.Subnets, n.Status.Subnets) ||
				!equality.Semantic.DeepEqual(o.Status.PodAddressReservations, n.Status.PodAddressReservations)
		},
	}
}

// RequiredIAMActions are the EC2 actions the reservations use, granted
// by docs/iam/nodeeni.json: the create and the delete only on
// reservations carrying the cluster's tag, the create only in the
// cluster's VPC. They are checked at first use, as the NodeENI
// controller's scoped actions are: EC2's refusal becomes the condition's
// EC2Error, naming the action.
func RequiredIAMActions() []string {
	return []string{"ec2:CreateSubnetCidrReservation", "ec2:GetSubnetCidrReservations", "ec2:DeleteSubnetCidrReservation"}
}
