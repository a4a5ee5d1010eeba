package podranges

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// Finalizer keeps a NodeENI until its reservations are deleted.
const Finalizer = "podranges.eni-operator.io/finalizer"

// The tags of a reservation, set with its creation. The keys are those
// of the NodeENI controller's ENIs, so the IAM conditions on the cluster
// tag hold for both.
const (
	TagCluster    = "eni-operator.io/cluster"
	TagNodeENI    = "eni-operator.io/nodeeni"
	TagNodeENIUID = "eni-operator.io/nodeeni-uid"
	TagProof      = "eni-operator.io/proof"
)

// Reasons of the PodAddressesReserved condition and the events.
const (
	ReasonReserved      = "Reserved"
	ReasonPending       = "Pending"
	ReasonNoRoom        = "NoRoom"
	ReasonEC2Error      = "EC2Error"
	ReasonUntrusted     = "UntrustedReservation"
	ReasonDryRun        = "DryRun"
	reasonDeleted       = "ReservationDeleted"
	reasonCreated       = "ReservationCreated"
	conditionType       = v1alpha1.ConditionPodAddressesReserved
	retryAfterEC2Errors = 30 * time.Second
)

// EC2 is what reservations need of EC2; *ec2.State implements it.
type EC2 interface {
	Catalog(ctx context.Context, maxAge time.Duration) (ec2.Catalog, error)
	ListSubnetCIDRReservations(ctx context.Context, subnetID string) ([]ec2.SubnetCIDRReservation, error)
	CreateSubnetCIDRReservation(ctx context.Context, subnetID, cidr, description string, tags map[string]string) (ec2.SubnetCIDRReservation, error)
	DeleteSubnetCIDRReservation(ctx context.Context, id string) error
	SubnetAddresses(ctx context.Context, subnetID string) ([]netip.Prefix, error)
}

type reconciler struct {
	client   client.Client
	ec2      EC2
	opts     Options
	recorder events.EventRecorder
}

// pass is one NodeENI's reconcile.
type pass struct {
	ne   *v1alpha1.NodeENI
	bits int
	// subnets are the NodeENI's subnets, as the catalog shows them.
	subnets map[string]netip.Prefix
	// inSubnet are every reservation of each subnet looked at.
	inSubnet map[string][]ec2.SubnetCIDRReservation
	mine     []reservation
	problems []string
	reason   string
	// now is when the pass began, on the reconciler's clock.
	now time.Time
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ne := &v1alpha1.NodeENI{}
	if err := r.client.Get(ctx, req.NamespacedName, ne); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	p := &pass{ne: ne, bits: wantedBits(ne), inSubnet: map[string][]ec2.SubnetCIDRReservation{}, now: r.opts.Clock.Now()}
	if p.bits == 0 && !controllerutil.ContainsFinalizer(ne, Finalizer) && len(ne.Status.PodAddressReservations) == 0 {
		return reconcile.Result{}, nil // nothing of ours
	}
	if p.bits > 0 && !r.opts.DryRun && !controllerutil.ContainsFinalizer(ne, Finalizer) {
		if err := r.patchFinalizer(ctx, ne, controllerutil.AddFinalizer); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.read(ctx, p); err != nil {
		return reconcile.Result{}, err
	}
	ids := sortedKeys(p.subnets)
	pl := decide(p.bits, ids, p.mine)
	kept := pl.Keep
	if r.opts.DryRun {
		if len(pl.Create)+len(pl.Delete) > 0 {
			p.problem(ReasonDryRun, fmt.Sprintf("dry run (--dry-run): would reserve a /%d in %v and delete %d reservations", p.bits, pl.Create, len(pl.Delete)))
		}
	} else {
		kept = r.carryOut(ctx, p, pl)
	}
	if err := r.writeStatus(ctx, p, kept); err != nil {
		return reconcile.Result{}, err
	}
	if !ne.DeletionTimestamp.IsZero() && (len(p.problems) == 0 || r.opts.DryRun) {
		return reconcile.Result{}, client.IgnoreNotFound(r.patchFinalizer(ctx, ne, controllerutil.RemoveFinalizer))
	}
	if len(p.problems) > 0 {
		failingFor := time.Duration(0) // a NodeENI going has no condition
		if c := meta.FindStatusCondition(ne.Status.Conditions, conditionType); c != nil {
			failingFor = p.now.Sub(c.LastTransitionTime.Time)
		}
		return reconcile.Result{RequeueAfter: retryDelay(failingFor, retryAfterEC2Errors, r.opts.Resync)}, nil
	}
	return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
}

// patchFinalizer adds or removes the finalizer (change) under an
// optimistic lock.
func (r *reconciler) patchFinalizer(ctx context.Context, ne *v1alpha1.NodeENI, change func(client.Object, string) bool) error {
	old := ne.DeepCopy()
	change(ne, Finalizer)
	return r.client.Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
}

// retryDelay is when a NodeENI whose reservations have failed for
// failingFor is tried again: as long again as it has been failing, from
// floor up to ceiling, so a subnet with no room costs its two calls ever
// more rarely.
func retryDelay(failingFor, floor, ceiling time.Duration) time.Duration {
	return min(max(failingFor, floor), ceiling)
}

// wantedBits is the reservation's prefix length the NodeENI asks for; 0
// when it asks for none or is being deleted.
func wantedBits(ne *v1alpha1.NodeENI) int {
	if !ne.DeletionTimestamp.IsZero() || ne.Spec.Multus == nil || ne.Spec.Multus.PodAddressReservation == nil {
		return 0
	}
	return int(ne.Spec.Multus.PodAddressReservation.PrefixLength)
}

// read finds the NodeENI's subnets (its resolved subnets that the
// catalog shows in the VPC, with the catalog's CIDR) and its proven
// reservations there and in the subnets its status names.
func (r *reconciler) read(ctx context.Context, p *pass) error {
	cat, err := r.ec2.Catalog(ctx, r.opts.CatalogMaxAge)
	if err != nil {
		return err
	}
	cidrOf := map[string]netip.Prefix{}
	for _, s := range cat.Subnets {
		if c, err := netip.ParsePrefix(s.CIDR); err == nil {
			cidrOf[s.ID] = c
		}
	}
	p.subnets = map[string]netip.Prefix{}
	if p.bits > 0 {
		for _, s := range p.ne.Status.Subnets {
			if c, ok := cidrOf[s.ID]; ok {
				p.subnets[s.ID] = c
			}
		}
	}
	// Where reservations of the NodeENI may be: its subnets, also while
	// it goes, and those its status records.
	var scope []string
	for _, s := range p.ne.Status.Subnets {
		scope = append(scope, s.ID)
	}
	for _, s := range p.ne.Status.PodAddressReservations {
		scope = append(scope, s.SubnetID)
	}
	slices.Sort(scope)
	scope = slices.DeleteFunc(slices.Compact(scope), func(id string) bool { _, ok := cidrOf[id]; return !ok })
	for _, subnet := range scope {
		list, err := r.ec2.ListSubnetCIDRReservations(ctx, subnet)
		if err != nil {
			p.problem(ReasonEC2Error, fmt.Sprintf("listing the reservations of subnet %s: %s", subnet, ec2.Message(err)))
			continue
		}
		p.inSubnet[subnet] = list
		for _, res := range list {
			if m, ok := r.proven(ctx, p.ne, res); ok {
				p.mine = append(p.mine, m)
			}
		}
	}
	return nil
}

// proven reports whether a reservation is one this operator made for the
// NodeENI: its tags name the cluster and the NodeENI's UID, and its
// proof binds them to its subnet and CIDR. One that names them without
// a valid proof is reported, never touched.
func (r *reconciler) proven(ctx context.Context, ne *v1alpha1.NodeENI, res ec2.SubnetCIDRReservation) (reservation, bool) {
	if res.Tags[TagCluster] != r.opts.ClusterName || res.Tags[TagNodeENIUID] != string(ne.UID) {
		return reservation{}, false
	}
	cidr, err := netip.ParsePrefix(res.CIDR)
	if err == nil {
		_, err = r.opts.Keys.VerifyReservation(claimOf(r.opts.ClusterName, ne, res.SubnetID, res.CIDR), res.Tags[TagProof])
	}
	if err != nil {
		msg := fmt.Sprintf("subnet CIDR reservation %s (%s in %s) carries this NodeENI's tags but not a valid proof (%v): it is left alone; delete it if no one else made it", res.ID, res.CIDR, res.SubnetID, err)
		r.recorder.Eventf(ne, nil, corev1.EventTypeWarning, ReasonUntrusted, "Prove", "%s", msg)
		log.FromContext(ctx).Info("untrusted subnet CIDR reservation", "reservation", res.ID, "reason", err.Error())
		return reservation{}, false
	}
	return reservation{ID: res.ID, Subnet: res.SubnetID, CIDR: cidr}, true
}

func claimOf(cluster string, ne *v1alpha1.NodeENI, subnet, cidr string) ownership.ReservationClaim {
	return ownership.ReservationClaim{Cluster: cluster, NodeENIUID: string(ne.UID), Subnet: subnet, CIDR: cidr}
}

// carryOut deletes what the plan drops and creates what it lacks, and
// returns the reservations in place.
func (r *reconciler) carryOut(ctx context.Context, p *pass, pl plan) []reservation {
	for _, d := range pl.Delete {
		if err := r.ec2.DeleteSubnetCIDRReservation(ctx, d.ID); err != nil && !ec2.IsNotFound(err) {
			p.problem(ReasonEC2Error, fmt.Sprintf("deleting reservation %s of subnet %s: %s", d.ID, d.Subnet, ec2.Message(err)))
			continue
		}
		r.recorder.Eventf(p.ne, nil, corev1.EventTypeNormal, reasonDeleted, "Unreserve", "subnet CIDR reservation %s (%s in %s) deleted", d.ID, d.CIDR, d.Subnet)
	}
	kept := slices.Clone(pl.Keep)
	for _, subnet := range pl.Create {
		if res, ok := r.create(ctx, p, subnet); ok {
			kept = append(kept, res)
		}
	}
	return kept
}

// create reserves the highest free block of the wanted size in subnet,
// its proof among the tags of the create: a crash after it leaves a
// reservation the next pass finds and keeps.
func (r *reconciler) create(ctx context.Context, p *pass, subnet string) (reservation, bool) {
	if _, listed := p.inSubnet[subnet]; !listed {
		return reservation{}, false // its listing failed: said already
	}
	taken, err := r.ec2.SubnetAddresses(ctx, subnet)
	if err != nil {
		p.problem(ReasonEC2Error, fmt.Sprintf("reading the addresses in use in subnet %s: %s", subnet, ec2.Message(err)))
		return reservation{}, false
	}
	for _, res := range p.inSubnet[subnet] {
		if c, err := netip.ParsePrefix(res.CIDR); err == nil {
			taken = append(taken, c)
		}
	}
	block, ok := pick(p.subnets[subnet], p.bits, taken)
	if !ok {
		p.problem(ReasonNoRoom, fmt.Sprintf("subnet %s (%s) has no free /%d without an address in use or another reservation: ask for a longer prefix, or free addresses", subnet, p.subnets[subnet], p.bits))
		return reservation{}, false
	}
	cidr := block.String()
	tags := map[string]string{TagCluster: r.opts.ClusterName, TagNodeENI: p.ne.Name, TagNodeENIUID: string(p.ne.UID),
		TagProof: r.opts.Keys.SignReservation(claimOf(r.opts.ClusterName, p.ne, subnet, cidr))}
	res, err := r.ec2.CreateSubnetCIDRReservation(ctx, subnet, cidr, "pods of NodeENI "+p.ne.Name, tags)
	if err != nil {
		p.problem(ReasonEC2Error, fmt.Sprintf("reserving %s in subnet %s: %s", cidr, subnet, ec2.Message(err)))
		return reservation{}, false
	}
	r.recorder.Eventf(p.ne, nil, corev1.EventTypeNormal, reasonCreated, "Reserve", "subnet CIDR reservation %s: %s of subnet %s for the pods' addresses", res.ID, cidr, subnet)
	return reservation{ID: res.ID, Subnet: subnet, CIDR: block}, true
}

func (p *pass) problem(reason, msg string) {
	if p.reason == "" {
		p.reason = reason
	}
	p.problems = append(p.problems, msg)
}

// writeStatus records the reservations in place and says where the
// NodeENI stands in PodAddressesReserved (removed when it asks for none).
func (r *reconciler) writeStatus(ctx context.Context, p *pass, kept []reservation) error {
	ne := p.ne
	old := ne.DeepCopy()
	slices.SortFunc(kept, func(a, b reservation) int { return strings.Compare(a.Subnet, b.Subnet) })
	ne.Status.PodAddressReservations = nil
	for _, k := range kept {
		ne.Status.PodAddressReservations = append(ne.Status.PodAddressReservations,
			v1alpha1.PodAddressReservationStatus{SubnetID: k.Subnet, ID: k.ID, CIDR: k.CIDR.String()})
	}
	if p.bits == 0 {
		meta.RemoveStatusCondition(&ne.Status.Conditions, conditionType)
	} else {
		meta.SetStatusCondition(&ne.Status.Conditions, conditionOf(p, kept))
	}
	if equalStatus(old, ne) {
		return nil
	}
	err := r.client.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func conditionOf(p *pass, kept []reservation) metav1.Condition {
	c := metav1.Condition{Type: conditionType, ObservedGeneration: p.ne.Generation, LastTransitionTime: metav1.NewTime(p.now)}
	var parts []string
	for _, k := range kept {
		parts = append(parts, k.Subnet+" "+k.CIDR.String())
	}
	switch {
	case len(p.problems) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, p.reason
		c.Message = bounded.Truncate("pods' range not reserved: "+bounded.List(p.problems, "; ", bounded.Items), bounded.Message)
	case len(p.subnets) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonPending, "waiting for the NodeENI's subnets to be resolved"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonReserved
		c.Message = bounded.Truncate("pods' range reserved (explicit subnet CIDR reservations): "+strings.Join(parts, ", "), bounded.Message)
	}
	return c
}

func equalStatus(a, b *v1alpha1.NodeENI) bool {
	return slices.Equal(a.Status.PodAddressReservations, b.Status.PodAddressReservations) &&
		slices.EqualFunc(a.Status.Conditions, b.Status.Conditions, func(x, y metav1.Condition) bool {
			return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
		})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
