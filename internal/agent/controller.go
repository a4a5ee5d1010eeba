package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// The agent reads its node's ENINode and the NodeENIs' specs, and writes
// only its ENINode's status (server-side apply; the admission policy
// holds each agent to its own node); it needs nothing else from the API.
// These markers are generated into config/agent/role.yaml, not into the
// operator's role.
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=eninodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=eninodes/status,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis,verbs=get;list;watch

// reconciler brings one node's interfaces to what its ENINode and the
// NodeENIs ask for.
// There is one request key, the node: links, names, driver bindings and
// the device plugin config are shared by all NodeENIs of the node, so
// one pass decides them together.
type reconciler struct {
	client        client.Client
	node          string
	host          host
	guard         guard // which links an attachment's MAC address may name
	defaultDriver string
	watch         *linkWatch
	metrics       *metrics
	retryBase     time.Duration
	retryMax      time.Duration
	// dpdk binds devices to DPDK drivers; sriov publishes them to the
	// SR-IOV device plugin (nil: publishing off).
	dpdk  *dpdkBinder
	sriov *sriovPublisher

	mu       sync.Mutex  // one pass at a time; the fields below are its memory
	saved    *savedState // shared with dpdk and sriov, used within a pass
	failures int         // consecutive passes that left something pending or failed
}

// savedState is the agent's memory of the host and the state file it is
// saved to, before the host is touched.
type savedState struct {
	path  string
	state *nodeState // nil until read
}

// dpdkBinder binds ENIs' devices to DPDK drivers and gives them back to
// their kernel drivers.
type dpdkBinder struct {
	sys     SysFS
	host    host
	guard   guard
	metrics *metrics
	saved   *savedState
}

// sriovPublisher keeps the SR-IOV device plugin's config.
type sriovPublisher struct {
	path          string
	reload        Reload
	metrics       *metrics
	saved         *savedState
	race          func() // tests: someone else's edit between the read and the write of the device plugin config
	reloadPending bool   // the device plugin has not been told of the config yet (its last telling failed): tell it
}

// configResult is what configuring one want came to before the final look at
// the host.
type configResult struct {
	w       want
	state   string // v1alpha1.Interface*
	message string
	dpdk    *deviceRecord // set when bound to a DPDK driver
	kernel  *pciDevice    // set when published with its kernel driver (SR-IOV without DPDK)
}

// iface is one want's interface as configure works on it: the link with
// the want's MAC address (found: there is one), the ENI's device record
// (nil: none yet) and the node state the pass builds.
type iface struct {
	w     want
	l     link
	found bool
	rec   *deviceRecord
	next  *nodeState
}

// Reconcile implements reconcile.Reconciler. It runs the phases of one
// pass over the node in order — read what is wanted, configure the
// interfaces and release the rest, conclude their status entries, report
// them — and a phase's error ends the pass.
func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := phases.Run(ctx, &pass{}, r.read, r.configureAll, r.conclude, r.reportEntries); s != nil {
		return s.Result, s.Err
	}
	return reconcile.Result{}, nil
}

// pass is what the phases of one reconcile learn about the node.
type pass struct {
	en      *v1alpha1.ENINode // nil: the operator deleted it
	wants   []want
	links   []link     // the host's, as they are after configure and release
	next    *nodeState // the agent's memory as this pass leaves it
	outs    []configResult
	entries map[string]v1alpha1.InterfaceStatus
}

// read loads the agent's memory on the first pass and works out the
// interfaces the node's ENINode and the NodeENIs want.
func (r *reconciler) read(ctx context.Context, p *pass) *phases.Stop {
	if r.saved.state == nil {
		st, err := loadState(r.saved.path)
		if err != nil {
			return phases.Done(err)
		}
		r.saved.state = st
	}
	// The operator deletes a node's ENINode once it holds no ENI: none
	// is then wanted (but for an earlier operator's entries, desired),
	// and what the agent configured is released.
	en := &v1alpha1.ENINode{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: r.node}, en); apierrors.IsNotFound(err) {
		en = nil
	} else if err != nil {
		return phases.Done(err)
	}
	list := &v1alpha1.NodeENIList{}
	if err := r.client.List(ctx, list); err != nil {
		return phases.Done(err)
	}
	p.en = en
	p.wants = desired(r.node, en, list.Items, r.defaultDriver)
	r.watch.setMACs(r.watchedMACs(p.wants))
	return nil
}

// configureAll brings every wanted interface to its want and releases
// those no longer wanted.
func (r *reconciler) configureAll(ctx context.Context, p *pass) *phases.Stop {
	links, err := r.host.links()
	if err != nil {
		return phases.Done(err)
	}
	p.next = r.saved.state.clone()
	bad := conflicts(p.wants)
	p.outs = make([]configResult, 0, len(p.wants))
	wanted := map[string]bool{}
	changed := false
	for _, w := range p.wants {
		wanted[w.ENIID] = true
		o, did := r.configure(ctx, w, links, bad[w.ENIID], p.next)
		changed = changed || did
		p.outs = append(p.outs, o)
	}
	if r.release(ctx, wanted, links, p.next) {
		changed = true
	}
	if changed {
		// Report what the host has now, not what was asked for.
		if links, err = r.host.links(); err != nil {
			return phases.Done(err)
		}
	}
	p.links = links
	return nil
}

// conclude makes the status entries from the host as it is now,
// publishes the SR-IOV devices and saves the agent's memory.
func (r *reconciler) conclude(ctx context.Context, p *pass) *phases.Stop {
	p.entries = make(map[string]v1alpha1.InterfaceStatus, len(p.outs))
	for _, o := range p.outs {
		p.entries[o.w.ENIID] = r.entry(o, p.links)
	}
	if r.sriov != nil {
		r.sriov.publish(ctx, p.outs, p.entries, p.next)
	}
	if err := r.saved.persist(p.next); err != nil {
		return phases.Done(err)
	}
	return nil
}

// watchedMACs are the MAC addresses whose link events matter: the wanted
// interfaces and those the agent still has to release.
func (r *reconciler) watchedMACs(ws []want) map[string]bool {
	m := make(map[string]bool, len(ws)+len(r.saved.state.Devices))
	for _, w := range ws {
		m[w.MAC] = true
	}
	for _, d := range r.saved.state.Devices {
		m[d.MAC] = true
	}
	return m
}

// persist saves next when it differs from what is saved, and makes it
// the agent's memory.
func (s *savedState) persist(next *nodeState) error {
	if next.equal(s.state) {
		return nil
	}
	if err := next.save(s.path); err != nil {
		return err
	}
	s.state = next.clone()
	return nil
}

func failed(w want, format string, args ...any) configResult {
	return configResult{w: w, state: v1alpha1.InterfaceFailed, message: fmt.Sprintf(format, args...)}
}

func pending(w want, format string, args ...any) configResult {
	return configResult{w: w, state: v1alpha1.InterfacePending, message: fmt.Sprintf(format, args...)}
}

// configure brings one interface to its want. did tells whether the host
// changed.
func (r *reconciler) configure(ctx context.Context, w want, links []link, conflict string, next *nodeState) (o configResult, did bool) {
	if conflict != "" {
		return failed(w, "%s", conflict), false
	}
	l, found, err := r.guard.eniLink(w, links)
	if err != nil {
		return failed(w, "%v", err), false
	}
	x := &iface{w: w, l: l, found: found, rec: next.Devices[w.ENIID], next: next}
	if w.DPDK {
		return r.dpdk.configureDPDK(ctx, x)
	}
	if x.rec != nil && x.rec.BoundDriver != "" {
		var stop *configResult
		if links, stop, did = r.dpdk.leaveDPDK(ctx, x, links); stop != nil {
			return *stop, did
		}
	}
	if !x.found {
		return pending(w, "waiting for an interface with MAC address %s to appear on the node", w.MAC), false
	}
	o, changed := r.configureLink(ctx, x, links)
	return o, did || changed
}

// configureLink gives a kernel interface its name, MTU and up state and,
// when it is published to the SR-IOV device plugin, checks its device.
// did tells whether the host changed.
func (r *reconciler) configureLink(ctx context.Context, x *iface, links []link) (o configResult, did bool) {
	w, target := x.w, x.w
	if target.Name == "" && x.rec != nil && x.rec.OriginalName != "" {
		// interfaceName was removed from the spec: the kernel's name comes back.
		target.Name = x.rec.OriginalName
	}
	acts, err := planLink(x.l, target, namesOf(links))
	if err != nil {
		return failed(w, "%v", err), false
	}
	stop, did := r.applyLink(ctx, x, acts)
	if stop != nil {
		return *stop, did
	}
	if rec := x.rec; rec != nil && rec.OriginalName != "" && target.Name == rec.OriginalName {
		rec.OriginalName, rec.Name = "", ""
	}
	if w.kernelSRIOV() && r.sriov != nil {
		// Without --sriov-config nothing is published, so nothing to check.
		dev, stop := r.dpdk.kernelDevice(w, x.l)
		if stop != nil {
			return *stop, did
		}
		return configResult{w: w, state: v1alpha1.InterfaceConfigured, kernel: &dev}, did
	}
	return configResult{w: w, state: v1alpha1.InterfaceConfigured}, did
}

// eniLink is w's interface among links (findLink), refused with an error
// when it is not one the agent may configure (guard.refusal): the MAC
// address comes from a status anyone allowed to patch it can rewrite.
func (g guard) eniLink(w want, links []link) (link, bool, error) {
	l, found, err := findLink(links, w.MAC)
	if err != nil || !found {
		return l, found, err
	}
	if why := g.refusal(l, links); why != "" {
		return link{}, false, errors.New(refusedMessage(w, why))
	}
	return l, true, nil
}

// applyLink carries out the link's actions (rename, MTU, up). A rename
// is recorded first, creating x's device record when there is none. It
// stops at the first failure (stop); changed tells whether the host
// changed or a change was attempted.
func (r *reconciler) applyLink(ctx context.Context, x *iface, acts []linkAction) (stop *configResult, changed bool) {
	w, l := x.w, x.l
	for _, a := range acts {
		if a.Kind == actRename {
			rec := x.record()
			if rec.OriginalName == "" {
				rec.OriginalName = l.Name
			}
			rec.Name = a.Name
			// Remembered before the rename, so a crash right after still
			// knows the kernel's name.
			if err := r.saved.persist(x.next); err != nil {
				return stopWith(failed(w, "%v", err)), changed
			}
		}
		err := r.host.apply(l.Index, a)
		r.metrics.op(a.Kind.String(), err)
		if err != nil {
			return stopWith(failed(w, "%v", err)), true
		}
		changed = true
		log.FromContext(ctx).Info("interface configured", "eni", w.ENIID, "nodeENI", w.NodeENI, "interface", l.Name, "change", a.Kind.String(), "name", a.Name, "mtu", a.MTU)
	}
	return nil, changed
}

// record is x's device record, created in the pass's state when there
// is none.
func (x *iface) record() *deviceRecord {
	if x.rec == nil {
		x.rec = &deviceRecord{NodeENI: x.w.NodeENI, MAC: x.w.MAC}
		x.next.Devices[x.w.ENIID] = x.rec
	}
	return x.rec
}

// release undoes what the agent did to interfaces that are no longer
// wanted (NodeENI deleted, node unmatched, ENI detaching): the original
// driver and the kernel's name come back. A record whose undo fails stays,
// to be tried again.
func (r *reconciler) release(ctx context.Context, wanted map[string]bool, links []link, next *nodeState) (did bool) {
	ids := make([]string, 0, len(next.Devices))
	for id := range next.Devices {
		if !wanted[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	logger := log.FromContext(ctx)
	for _, id := range ids {
		rec := next.Devices[id]
		if rec.BoundDriver != "" {
			if err := r.dpdk.restoreDriver(rec); err != nil {
				logger.Error(err, "giving a released ENI's device back to its driver; will retry", "eni", id, "pci", rec.PCIAddress, "driver", rec.OriginalDriver)
				continue
			}
			logger.Info("released ENI's device given back to its driver", "eni", id, "pci", rec.PCIAddress, "driver", rec.OriginalDriver)
			did = true
		}
		if rec.OriginalName != "" {
			// The record was made for a link the guard passed; it is asked
			// again, so no record can ever rename the node's own interface.
			if l, found, _ := findLink(links, rec.MAC); found && l.Name != rec.OriginalName && r.guard.refusal(l, links) == "" {
				if idx, taken := namesOf(links)[rec.OriginalName]; taken && idx != l.Index {
					logger.Info("released interface keeps its name: its kernel name is taken", "eni", id, "interface", l.Name, "kernelName", rec.OriginalName)
				} else {
					err := r.host.rename(l.Index, rec.OriginalName)
					r.metrics.op("restore-name", err)
					if err != nil {
						logger.Error(err, "renaming a released interface back; will retry", "eni", id)
						continue
					}
					logger.Info("released interface renamed back", "eni", id, "from", l.Name, "to", rec.OriginalName)
					did = true
				}
			}
		}
		delete(next.Devices, id)
	}
	return did
}
