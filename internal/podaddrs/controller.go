package podaddrs

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// reconciler registers the Multus pod addresses of one node (the
// request's name) on its ENIs.
type reconciler struct {
	client   client.Client
	pods     cache.Cache
	ec2      EC2
	opts     Options
	tally    *tally
	limits   *limitMemo
	waits    *waiters
	backoffs *backoffs
	recorder events.EventRecorder
	records  recordWriter
	calls    addressCalls
}

// pass is one node's reconcile: what read learnt, what decide chose and
// what carrying it out left.
type pass struct {
	node string
	en   *v1alpha1.ENINode
	// pods are the node's kept pods, by namespace/name.
	pods map[string]*corev1.Pod
	in   input
	d    decision
	done execResult
	// now is when the pass began, on the reconciler's clock.
	now time.Time
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &pass{node: req.Name, now: r.opts.Clock.Now(), done: newExecResult()}
	if s := phases.Run(ctx, p, r.read, r.decide, r.verify, r.records.record, r.calls.assign, r.calls.unassign, r.records.forget, r.gate, r.report); s != nil {
		return s.Result, s.Err
	}
	return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
}

// inventoryPoll is how often a pass looks again for the first inventory
// of the NodeENIs' ENIs.
const inventoryPoll = 500 * time.Millisecond

// read gathers the node's ENIs (its ENINode, as EC2 shows them), its
// pods' claims and the record. Until the first inventory of the
// NodeENIs' ENIs it waits: the node's ENIs would all be unknown.
func (r *reconciler) read(ctx context.Context, p *pass) *phases.Stop {
	if r.opts.InventoryScope != "" && !r.ec2.Synced(r.opts.InventoryScope) {
		return phases.After(inventoryPoll)
	}
	p.en = &v1alpha1.ENINode{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: p.node}, p.en); err != nil {
		if apierrors.IsNotFound(err) {
			r.tally.forgetNode(p.node) // no ENI left: EC2 took the addresses with them
			r.limits.forget(p.node)
			r.waits.forget(p.node)
			r.backoffs.forget(p.node)
			return r.gateAlone(ctx, p)
		}
		return phases.Done(err)
	}
	registers, err := r.registering(ctx)
	if err != nil {
		return phases.Done(err)
	}
	if p.in, err = r.interfaces(ctx, p.node, p.en, registers); err != nil {
		return phases.Done(err)
	}
	if len(p.in.Interfaces) == 0 && len(p.en.Spec.PodAddresses) == 0 {
		r.tally.forgetNode(p.node)
		return r.gateAlone(ctx, p)
	}
	if p.pods, p.in.Claims, err = r.claims(ctx, p.node); err != nil {
		return phases.Done(err)
	}
	p.in.Record = p.en.Spec.PodAddresses
	p.in.HeldBy = func(a netip.Addr) string {
		e, _ := r.ec2.ENIByIP(a.String())
		return e.ID
	}
	p.in.Backoff, _ = r.backoffs.active(p.node, p.now)
	return nil
}

// registering returns the NodeENIs that ask for pod addresses.
func (r *reconciler) registering(ctx context.Context) (map[string]bool, error) {
	var list v1alpha1.NodeENIList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ne := range list.Items {
		if registersAddresses(&ne) && ne.DeletionTimestamp.IsZero() {
			out[ne.Name] = true
		}
	}
	return out, nil
}

// registersAddresses reports whether a NodeENI asks for its Multus pods'
// addresses on its ENIs.
func registersAddresses(ne *v1alpha1.NodeENI) bool {
	return ne.Spec.Multus != nil && ne.Spec.Multus.RegisterPodAddresses
}

// interfaces describes the node's attached ENIs as EC2 shows them. An
// ENI EC2 does not show attached to the node's own instance is not
// worked on (Unknown): only an ENI the operator attached to this node
// takes this node's pods' addresses.
func (r *reconciler) interfaces(ctx context.Context, node string, en *v1alpha1.ENINode, registers map[string]bool) (input, error) {
	in := input{Unknown: map[string]bool{}}
	n := &corev1.Node{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return in, client.IgnoreNotFound(err)
	}
	instance, ok := awsnode.Instance(n)
	if !ok {
		return in, nil
	}
	cat, err := r.ec2.Catalog(ctx, r.opts.CatalogMaxAge)
	if err != nil {
		return in, err
	}
	for _, a := range en.Spec.Attachments {
		e, ok := r.ec2.ENI(a.ENIID)
		if !ok || e.Attachment == nil || e.Attachment.InstanceID != instance || a.Status != v1alpha1.AttachmentAttached {
			in.Unknown[a.ENIID] = true
			continue
		}
		var limits awstypes.InstanceLimits
		if registers[a.NodeENI] { // the others only answer the gate: no call for them
			if limits, err = r.limits.of(ctx, r.ec2, node, instance); err != nil {
				return in, err
			}
		}
		in.Interfaces = append(in.Interfaces, ifaceOf(e, a.NodeENI, registers[a.NodeENI], cat, limits))
	}
	return in, nil
}

func ifaceOf(e awstypes.ENI, nodeENI string, registers bool, cat ec2.Catalog, l awstypes.InstanceLimits) iface {
	f := iface{ENI: e.ID, NodeENI: nodeENI, MAC: strings.ToLower(e.MAC), Registers: registers, Held: map[netip.Addr]bool{}}
	f.Primary, _ = netip.ParseAddr(e.PrimaryIP)
	for _, s := range cat.Subnets {
		if s.ID == e.SubnetID {
			f.Subnet4, _ = netip.ParsePrefix(s.CIDR)
			f.Subnet6, _ = netip.ParsePrefix(s.IPv6CIDR)
		}
	}
	for _, ip := range append(append([]string(nil), e.SecondaryIPs...), e.IPv6Addresses...) {
		if a, err := netip.ParseAddr(ip); err == nil {
			f.Held[a] = true
		}
	}
	// A delegated prefix takes one of the interface's address slots.
	f.Free4 = l.IPv4PerInterface - 1 - len(e.SecondaryIPs) - len(e.IPv4Prefixes)
	f.Free6 = l.IPv6PerInterface - len(e.IPv6Addresses) - len(e.IPv6Prefixes)
	return f
}

// claims reads the network status of the node's running pods.
func (r *reconciler) claims(ctx context.Context, node string) (map[string]*corev1.Pod, []podClaim, error) {
	var list corev1.PodList
	if err := r.pods.List(ctx, &list, client.MatchingFields{podIndex: node}); err != nil {
		return nil, nil, err
	}
	pods := map[string]*corev1.Pod{}
	var out []podClaim
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue // its sandbox is gone, and with it the address
		}
		key := pod.Namespace + "/" + pod.Name
		pods[key] = pod
		v, ok := pod.Annotations[NetworkStatusAnnotation]
		if !ok {
			out = append(out, podClaim{Pod: key, NoStatus: true}) // a gated pod Multus has not reached yet
			continue
		}
		nets, err := parseNetworkStatus(v)
		out = append(out, podClaim{Pod: key, Created: pod.CreationTimestamp.Time, Networks: nets, Err: err})
	}
	return pods, out, nil
}

func (r *reconciler) decide(_ context.Context, p *pass) *phases.Stop {
	p.d = decide(p.in)
	return nil
}

// verify reads from EC2, at once, who holds the addresses the decision
// would record, and decides again with the answer: the inventory may be
// minutes old, and an address another tool assigned since is not the
// pod's to record, nor later to unassign. An address EC2 could not be
// asked about waits for the next pass.
func (r *reconciler) verify(ctx context.Context, p *pass) *phases.Stop {
	if len(p.d.Verify) == 0 {
		return nil
	}
	holders := make([]string, len(p.d.Verify))
	errs := make([]error, len(p.d.Verify))
	var wg sync.WaitGroup
	for i, a := range p.d.Verify {
		wg.Go(func() {
			e, err := r.ec2.HolderOf(ctx, a.String())
			holders[i], errs[i] = e.ID, err
		})
	}
	wg.Wait()
	p.in.Verified = map[netip.Addr]string{}
	for i, a := range p.d.Verify {
		switch err := errs[i]; {
		case err == nil:
			p.in.Verified[a] = holders[i]
		case ec2.IsNotFound(err):
			p.in.Verified[a] = ""
		default:
			p.done.retry = true
			log.FromContext(ctx).Error(err, "reading which ENI holds a pod address; trying again", "address", a)
		}
	}
	p.d = decide(p.in)
	if len(p.d.Verify) > 0 {
		p.done.retry = true // asked about none of them yet (a slot freed by EC2's answers): next pass
	}
	return nil
}

// limitMemo remembers each node's instance limits: an instance's type
// does not change while it runs, and a node's pass should not cost a
// DescribeInstances. An entry goes with the node's ENINode.
type limitMemo struct {
	mu sync.Mutex
	m  map[string]memoLimits
}

type memoLimits struct {
	instance string
	limits   awstypes.InstanceLimits
}

func newLimitMemo() *limitMemo { return &limitMemo{m: map[string]memoLimits{}} }

func (l *limitMemo) of(ctx context.Context, e EC2, node, instance string) (awstypes.InstanceLimits, error) {
	l.mu.Lock()
	v, ok := l.m[node]
	l.mu.Unlock()
	if ok && v.instance == instance {
		return v.limits, nil
	}
	inst, err := e.GetInstance(ctx, instance)
	if err != nil {
		return awstypes.InstanceLimits{}, fmt.Errorf("instance %s: %w", instance, err)
	}
	lim, err := e.InstanceLimits(ctx, inst.Type)
	if err != nil {
		return awstypes.InstanceLimits{}, fmt.Errorf("instance type %s: %w", inst.Type, err)
	}
	l.mu.Lock()
	l.m[node] = memoLimits{instance: instance, limits: lim}
	l.mu.Unlock()
	return lim, nil
}

func (l *limitMemo) forget(node string) {
	l.mu.Lock()
	delete(l.m, node)
	l.mu.Unlock()
}
