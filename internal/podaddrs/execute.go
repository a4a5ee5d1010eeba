package podaddrs

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// execResult is what carrying a decision out left.
type execResult struct {
	// assigned are the addresses EC2 assigned; unassigned those it took
	// off their ENI; failed those it refused to assign (dropped from the
	// record: not the ENI's).
	assigned, unassigned, failed map[netip.Addr]bool
	// refused are the assignments EC2 refused, for the report.
	refused []refusal
	// retry is set when a call failed in a way worth trying again.
	retry bool
}

func newExecResult() execResult {
	return execResult{assigned: map[netip.Addr]bool{}, unassigned: map[netip.Addr]bool{}, failed: map[netip.Addr]bool{}}
}

// retryAfter is when a pass whose call failed transiently runs again.
const retryAfter = 5 * time.Second

// recordWriter writes a node's record of pod addresses (its ENINode's
// spec.podAddresses).
type recordWriter struct{ client client.Client }

// addressCalls assigns and unassigns pod addresses on EC2.
type addressCalls struct{ ec2 EC2 }

// record writes the record with the addresses about to be assigned,
// before any is: an address assigned is thus always one the operator
// knows it may unassign, even if it crashes right after the call.
func (rw recordWriter) record(ctx context.Context, p *pass) *phases.Stop {
	if err := rw.write(ctx, p.en, p.d.Record); err != nil {
		return phases.Done(err)
	}
	return nil
}

// write replaces the ENINode's spec.podAddresses under an
// optimistic lock (the NodeENI controller writes the attachments).
func (rw recordWriter) write(ctx context.Context, en *v1alpha1.ENINode, rec []v1alpha1.PodAddress) error {
	if equality.Semantic.DeepEqual(en.Spec.PodAddresses, rec) || len(en.Spec.PodAddresses) == 0 && len(rec) == 0 {
		return nil
	}
	old := en.DeepCopy()
	en.Spec.PodAddresses = rec
	return rw.client.Patch(ctx, en, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
}

// assign makes one call per ENI and family. When a batch is refused, its
// addresses are tried one by one, so one bad address (taken since the
// decision, say) does not keep the others off the ENI.
func (ac addressCalls) assign(ctx context.Context, p *pass) *phases.Stop {
	for _, eni := range sortedKeys(p.d.Assign) {
		addrs := p.d.Assign[eni]
		err := ac.ec2.AssignAddresses(ctx, eni, split(addrs))
		if err == nil {
			p.done.markAssigned(addrs...)
			continue
		}
		if len(addrs) == 1 || !permanent(err) {
			p.done.assignFailed(p, eni, addrs, err)
			continue
		}
		for _, a := range addrs {
			if err := ac.ec2.AssignAddresses(ctx, eni, split([]netip.Addr{a})); err != nil {
				p.done.assignFailed(p, eni, []netip.Addr{a}, err)
			} else {
				p.done.markAssigned(a)
			}
		}
	}
	return nil
}

func (o *execResult) markAssigned(addrs ...netip.Addr) {
	for _, a := range addrs {
		o.assigned[a] = true
	}
}

// permanent reports whether EC2 refused the call itself (address taken,
// not in the subnet, over the limit), so trying it again cannot succeed.
func permanent(err error) bool {
	return ec2.IsInvalid(err) || ec2.IsInUse(err) || ec2.IsLimitExceeded(err)
}

func (o *execResult) assignFailed(p *pass, eni string, addrs []netip.Addr, err error) {
	if !permanent(err) {
		o.retry = true // throttled, unreachable: the record keeps them for the next pass
		return
	}
	for _, a := range addrs {
		o.failed[a] = true
		f := refusal{Pod: p.podOf(a), Reason: ReasonAssignFailed, Addr: a,
			Message: "EC2 refused to assign " + a.String() + " to " + eni + ": " + ec2.Message(err)}
		for _, i := range p.in.Interfaces {
			if i.ENI == eni {
				f.NodeENI = i.NodeENI
			}
		}
		o.refused = append(o.refused, f)
	}
}

// podOf names the pod an address is recorded for.
func (p *pass) podOf(a netip.Addr) string {
	for _, e := range p.d.Record {
		if e.Address == a.String() {
			return e.Pod
		}
	}
	return ""
}

// unassign takes the recorded addresses no pod claims off their ENIs,
// one call per ENI and family.
func (ac addressCalls) unassign(ctx context.Context, p *pass) *phases.Stop {
	for _, eni := range sortedKeys(p.d.Unassign) {
		addrs := p.d.Unassign[eni]
		err := ac.ec2.UnassignAddresses(ctx, eni, split(addrs))
		if err != nil && len(addrs) > 1 && permanent(err) {
			// One address the ENI no longer holds refuses the batch:
			// one by one, so the others are not left behind.
			for _, a := range addrs {
				ac.unassignOne(ctx, p, eni, a)
			}
			continue
		}
		p.done.unassignedOrNot(ctx, eni, addrs, err)
	}
	return nil
}

func (ac addressCalls) unassignOne(ctx context.Context, p *pass, eni string, a netip.Addr) {
	p.done.unassignedOrNot(ctx, eni, []netip.Addr{a}, ac.ec2.UnassignAddresses(ctx, eni, split([]netip.Addr{a})))
}

// unassignedOrNot records an unassign's result: done, or refused because
// the ENI (or the address on it) is gone, both mean the address is off
// the ENI; anything else is tried again.
func (o *execResult) unassignedOrNot(ctx context.Context, eni string, addrs []netip.Addr, err error) {
	if err != nil && !ec2.IsNotFound(err) && !permanent(err) {
		o.retry = true
		log.FromContext(ctx).Error(err, "unassigning pod addresses; trying again", "eni", eni, "addresses", addrs)
		return
	}
	for _, a := range addrs {
		o.unassigned[a] = true
	}
}

// forget drops from the record what is no longer on the ENIs: addresses
// unassigned, refused or found gone.
func (rw recordWriter) forget(ctx context.Context, p *pass) *phases.Stop {
	rec := slices.DeleteFunc(slices.Clone(p.d.Record), func(e v1alpha1.PodAddress) bool {
		a, err := netip.ParseAddr(e.Address)
		return err != nil || p.done.unassigned[a] || p.done.failed[a] || slices.Contains(p.d.Stale, e.Address)
	})
	if err := rw.write(ctx, p.en, rec); err != nil {
		return phases.Done(err)
	}
	return nil
}

func split(addrs []netip.Addr) ec2.Addresses {
	var out ec2.Addresses
	for _, a := range addrs {
		if a.Is4() {
			out.IPv4 = append(out.IPv4, a.String())
		} else {
			out.IPv6 = append(out.IPv6, a.String())
		}
	}
	return out
}

func sortedKeys(m map[string][]netip.Addr) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
