package tagger

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// locate finds the ENI that holds the pod's IP and checks it is one the
// tagger may tag.
func (r *Reconciler) locate(ctx context.Context, w *podWork) *phases.Stop {
	w.ip = podIP(&w.pod)
	if w.ip == "" {
		return phases.Done(nil) // the IP's arrival is an update that brings the pod back
	}
	eni, err := r.finder.find(ctx, w.slot, w.ip, w.rec, w.hasRec)
	if ec2.IsNotFound(err) {
		retry := notFoundRetry(missingFor(&w.pod, r.opts.Clock.Now()))
		gone := ""
		if w.hasRec && w.rec.ENI != "" {
			// The ENI the tags were written to no longer holds the IP
			// (deleted, or the address moved): say so, not Synced.
			gone = fmt.Sprintf("ENI %s, which carried the pod's tags, is gone; ", w.rec.ENI)
		}
		return &phases.Stop{Result: reconcile.Result{RequeueAfter: retry}, Err: r.onPod.report(ctx, &w.pod, verdict{status: corev1.ConditionFalse, reason: ReasonENINotFound,
			message: fmt.Sprintf("%sno ENI in the VPC holds the pod IP %s yet (addresses inside delegated prefixes are found only with the ENI inventory, --eni-inventory-interval > 0); retrying, less often the longer it lasts (at most every %v)", gone, w.ip, notFoundMaxRetry)})}
	}
	if err != nil && ctx.Err() != nil {
		// The manager is stopping: nothing went wrong with the pod.
		return phases.Done(ctx.Err())
	}
	if err != nil {
		return phases.Done(r.onPod.awsFailure(ctx, &w.pod, "looking up the pod's ENI", err))
	}
	w.eni = eni
	if len(r.subnets) > 0 && !r.subnets[eni.SubnetID] {
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonSubnetNotWanted,
			message: fmt.Sprintf("ENI %s is in subnet %s, which is not in --subnet-ids; not tagged", eni.ID, eni.SubnetID), event: true, warning: true})
	}
	if k, ok := tagkeys.HasKeyWithPrefix(eni.Tags, tagkeys.NodeENIPrefix); ok {
		// The NodeENI controller owns it and trusts only ENIs without the
		// tagger's token: tagging it would make the controller abandon
		// (and so leak) its own interface.
		return r.reportStop(ctx, w, verdict{status: corev1.ConditionFalse, reason: ReasonNodeENIInterface,
			message: fmt.Sprintf("ENI %s is a NodeENI interface (tag %s), owned by the NodeENI controller; it is tagged through its NodeENI's spec.tags, not pod annotations", eni.ID, bounded.Quoted(k)),
			event:   true, warning: true})
	}
	return nil
}

// podIP prefers the IPv4 address; IPv6-only pods use their IPv6 one.
func podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" && !strings.Contains(pod.Status.PodIP, ":") {
		return pod.Status.PodIP
	}
	for _, ip := range pod.Status.PodIPs {
		if !strings.Contains(ip.IP, ":") {
			return ip.IP
		}
	}
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return ""
}

// lookupTimeout bounds one pod's lookup, its batch's wait included.
const lookupTimeout = 2 * time.Minute

// eniFinder finds the ENI that holds a pod's address.
type eniFinder struct {
	ec2 EC2
	// inventory tells that the EC2 state keeps InventoryScope fresh;
	// fromMemory is --enable-eni-cache: the state's ENIs are read first.
	inventory, fromMemory bool
	lookups               *prometheus.CounterVec // by hit or miss
}

// find finds the pod's ENI: from what is already known (the ledger's
// ENI ID, the inventory) and else with a batched lookup, waited for
// without the reconcile's slot.
func (f eniFinder) find(ctx context.Context, s *slot, ip string, rec Record, hasRec bool) (awstypes.ENI, error) {
	if f.fromMemory && f.inventory && !f.ec2.Synced(InventoryScope) {
		// Until the first inventory is read, every pod would miss and
		// look its address up, fetching what the inventory is about to
		// bring (at 100,000 pods, 91 lookups beside its 100 pages): wait
		// for it instead. Fresh joins the read under way (or makes it),
		// so this costs no call; a failed read leaves the lookup below.
		_ = f.ec2.Fresh(ctx, InventoryScope, missRefreshMaxAge)
	}
	if f.fromMemory {
		if hasRec {
			if e, ok := f.ec2.ENI(rec.ENI); ok && e.Holds(ip) {
				f.lookups.WithLabelValues("hit").Inc()
				return e, nil
			}
		}
		if e, ok := f.ec2.ENIByIP(ip); ok {
			f.lookups.WithLabelValues("hit").Inc()
			return e, nil
		}
	}
	var e awstypes.ENI
	err := s.waitOnEC2(ctx, func() (err error) {
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		e, err = f.ec2.LookupByIP(lctx, ip)
		return err
	})
	f.lookups.WithLabelValues("miss").Inc()
	if err != nil && ec2.IsNotFound(err) && f.inventory {
		// Addresses inside delegated prefixes are only found by the
		// inventory; a refresh now is one paginated read for everyone.
		if f.ec2.Fresh(ctx, InventoryScope, missRefreshMaxAge) == nil {
			if pe, ok := f.ec2.ENIByIP(ip); ok {
				return pe, nil
			}
		}
	}
	return e, err
}
