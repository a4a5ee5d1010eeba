package agent

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// reportEntries writes the entries to the node's ENINode status and
// counts them; a node whose interfaces are not all configured is looked
// at again (retry).
func (r *reconciler) reportEntries(ctx context.Context, p *pass) *phases.Stop {
	statusErr := r.report(ctx, p.en, p.wants, p.entries)
	counts := r.count(p.entries)
	if statusErr != nil {
		return phases.Done(statusErr)
	}
	return &phases.Stop{Result: r.retry(ctx, counts)}
}

// count counts the entries by state, into the interfaces metric too.
func (r *reconciler) count(entries map[string]v1alpha1.InterfaceStatus) map[string]int {
	counts := map[string]int{v1alpha1.InterfaceConfigured: 0, v1alpha1.InterfacePending: 0, v1alpha1.InterfaceFailed: 0}
	for _, e := range entries {
		counts[e.State]++
	}
	for s, n := range counts {
		r.metrics.interfaces.WithLabelValues(s).Set(float64(n))
	}
	return counts
}

// retry is when to look again at a node whose interfaces are not all
// configured. Link events bring a hot-plugged interface in at once; this
// retry, backing off, covers what no event announces (a sysfs bind that
// settles late, a name freed, a missed event).
func (r *reconciler) retry(ctx context.Context, counts map[string]int) reconcile.Result {
	if counts[v1alpha1.InterfacePending]+counts[v1alpha1.InterfaceFailed] == 0 && (r.sriov == nil || !r.sriov.reloadPending) {
		r.failures = 0
		return reconcile.Result{}
	}
	r.failures++
	delay := r.retryBase << min(r.failures-1, 16)
	if delay > r.retryMax || delay <= 0 {
		delay = r.retryMax
	}
	log.FromContext(ctx).V(1).Info("interfaces not all configured; looking again", "pending", counts[v1alpha1.InterfacePending], "failed", counts[v1alpha1.InterfaceFailed], "after", delay)
	return reconcile.Result{RequeueAfter: delay}
}

// entry is the status entry of one interface, from the host as it is now.
func (r *reconciler) entry(o configResult, links []link) v1alpha1.InterfaceStatus {
	e := v1alpha1.InterfaceStatus{ENIID: o.w.ENIID, State: o.state, Message: o.message}
	if o.dpdk != nil {
		e.InterfaceName = o.dpdk.Name
		e.DPDKBound, e.DPDKDriver, e.DPDKPCIAddress = true, o.dpdk.BoundDriver, o.dpdk.PCIAddress
		return e
	}
	l, found, _ := findLink(links, o.w.MAC)
	if found {
		e.InterfaceName, e.MTU, e.Up = l.Name, int32(l.MTU), l.Up
	}
	if o.state == v1alpha1.InterfaceConfigured && !found {
		// Gone between the change and the look: hot-unplugged.
		e.State, e.Message = v1alpha1.InterfacePending, fmt.Sprintf("waiting for an interface with MAC address %s to appear on the node", o.w.MAC)
	}
	return e
}

// report writes the node's entries into its ENINode (nil: there is
// none) when they changed, logging interfaces that went wrong (once,
// when their message changes, not on every pass).
func (r *reconciler) report(ctx context.Context, en *v1alpha1.ENINode, wants []want, entries map[string]v1alpha1.InterfaceStatus) error {
	if en == nil {
		return nil
	}
	cur := make([]v1alpha1.InterfaceStatus, 0, len(wants))
	for _, w := range wants {
		// An ENI known only from an earlier operator's entries is not
		// the ENINode's to report (the admission policy refuses it).
		if slices.ContainsFunc(en.Spec.Attachments, func(a v1alpha1.ENIAttachment) bool { return a.ENIID == w.ENIID }) {
			cur = append(cur, entries[w.ENIID])
		}
	}
	old := en.Status.Interfaces
	if sameInterfaces(old, cur) {
		return nil
	}
	prev := make(map[string]v1alpha1.InterfaceStatus, len(old))
	for _, o := range old {
		prev[o.ENIID] = o
	}
	logger := log.FromContext(ctx)
	for _, w := range wants {
		c := entries[w.ENIID]
		if c.State != v1alpha1.InterfaceConfigured && prev[c.ENIID].Message != c.Message {
			logger.Info("interface not configured", "nodeENI", w.NodeENI, "eni", c.ENIID, "state", c.State, "reason", c.Message)
		}
	}
	err := ApplyInterfaces(ctx, r.client, r.node, stamp(old, cur, metav1.Now()))
	r.metrics.op("status-apply", err)
	if err != nil {
		return fmt.Errorf("reporting interfaces in ENINode %s: %w", r.node, err)
	}
	return nil
}
