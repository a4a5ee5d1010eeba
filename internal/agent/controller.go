package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
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
	sys           SysFS
	defaultDriver string
	sriovPath     string // "" turns SR-IOV publishing off
	reload        Reload
	statePath     string
	watch         *linkWatch
	metrics       *metrics
	retryBase     time.Duration
	retryMax      time.Duration

	mu            sync.Mutex // one pass at a time; the fields below are its memory
	state         *nodeState
	failures      int    // consecutive passes that left something pending or failed
	sriovRace     func() // tests: someone else's edit between the read and the write of the device plugin config
	reloadPending bool   // the device plugin has not been told of the config yet (its last telling failed): tell it
}

// outcome is what configuring one want came to before the final look at
// the host.
type outcome struct {
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
// interfaces and release the rest, conclude their status entries — then
// reports them; a phase's error ends the pass.
func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &pass{}
	for _, phase := range []func(context.Context, *pass) error{
		r.read, r.configureAll, r.conclude,
	} {
		if err := phase(ctx, p); err != nil {
			return reconcile.Result{}, err
		}
	}
	statusErr := r.report(ctx, p.en, p.wants, p.entries)
	counts := r.count(p.entries)
	if statusErr != nil {
		return reconcile.Result{}, statusErr
	}
	return r.retry(ctx, counts), nil
}

// pass is what the phases of one reconcile learn about the node.
type pass struct {
	en      *v1alpha1.ENINode // nil: the operator deleted it
	wants   []want
	links   []link     // the host's, as they are after configure and release
	next    *nodeState // the agent's memory as this pass leaves it
	outs    []outcome
	entries map[string]v1alpha1.InterfaceStatus
}

// read loads the agent's memory on the first pass and works out the
// interfaces the node's ENINode and the NodeENIs want.
func (r *reconciler) read(ctx context.Context, p *pass) error {
	if r.state == nil {
		st, err := loadState(r.statePath)
		if err != nil {
			return err
		}
		r.state = st
	}
	// The operator deletes a node's ENINode once it holds no ENI: none
	// is then wanted (but for an earlier operator's entries, desired),
	// and what the agent configured is released.
	en := &v1alpha1.ENINode{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: r.node}, en); apierrors.IsNotFound(err) {
		en = nil
	} else if err != nil {
		return err
	}
	list := &v1alpha1.NodeENIList{}
	if err := r.client.List(ctx, list); err != nil {
		return err
	}
	p.en = en
	p.wants = desired(r.node, en, list.Items, r.defaultDriver)
	r.watch.setMACs(r.watchedMACs(p.wants))
	return nil
}

// configureAll brings every wanted interface to its want and releases
// those no longer wanted.
func (r *reconciler) configureAll(ctx context.Context, p *pass) error {
	links, err := r.host.links()
	if err != nil {
		return err
	}
	p.next = r.state.clone()
	bad := conflicts(p.wants)
	p.outs = make([]outcome, 0, len(p.wants))
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
			return err
		}
	}
	p.links = links
	return nil
}

// conclude makes the status entries from the host as it is now,
// publishes the SR-IOV devices and saves the agent's memory.
func (r *reconciler) conclude(ctx context.Context, p *pass) error {
	p.entries = make(map[string]v1alpha1.InterfaceStatus, len(p.outs))
	for _, o := range p.outs {
		p.entries[o.w.ENIID] = r.entry(o, p.links)
	}
	if r.sriovPath != "" {
		r.publish(ctx, p.outs, p.entries, p.next)
	}
	return r.persist(p.next)
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
	if counts[v1alpha1.InterfacePending]+counts[v1alpha1.InterfaceFailed] == 0 && !r.reloadPending {
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

// watchedMACs are the MAC addresses whose link events matter: the wanted
// interfaces and those the agent still has to release.
func (r *reconciler) watchedMACs(ws []want) map[string]bool {
	m := make(map[string]bool, len(ws)+len(r.state.Devices))
	for _, w := range ws {
		m[w.MAC] = true
	}
	for _, d := range r.state.Devices {
		m[d.MAC] = true
	}
	return m
}

// persist saves next when it differs from what is saved, and makes it
// the agent's memory.
func (r *reconciler) persist(next *nodeState) error {
	if next.equal(r.state) {
		return nil
	}
	if err := next.save(r.statePath); err != nil {
		return err
	}
	r.state = next.clone()
	return nil
}

func failed(w want, format string, args ...any) outcome {
	return outcome{w: w, state: v1alpha1.InterfaceFailed, message: fmt.Sprintf(format, args...)}
}

func pending(w want, format string, args ...any) outcome {
	return outcome{w: w, state: v1alpha1.InterfacePending, message: fmt.Sprintf(format, args...)}
}

// configure brings one interface to its want. did tells whether the host
// changed.
func (r *reconciler) configure(ctx context.Context, w want, links []link, conflict string, next *nodeState) (o outcome, did bool) {
	if conflict != "" {
		return failed(w, "%s", conflict), false
	}
	l, found, err := r.eniLink(w, links)
	if err != nil {
		return failed(w, "%v", err), false
	}
	x := &iface{w: w, l: l, found: found, rec: next.Devices[w.ENIID], next: next}
	if w.DPDK {
		return r.configureDPDK(ctx, x)
	}
	if x.rec != nil && x.rec.BoundDriver != "" {
		var stop *outcome
		if links, stop, did = r.leaveDPDK(ctx, x, links); stop != nil {
			return *stop, did
		}
	}
	if !x.found {
		return pending(w, "waiting for an interface with MAC address %s to appear on the node", w.MAC), false
	}
	target := w
	if target.Name == "" && x.rec != nil && x.rec.OriginalName != "" {
		// interfaceName was removed from the spec: the kernel's name comes back.
		target.Name = x.rec.OriginalName
	}
	acts, err := planLink(x.l, target, namesOf(links))
	if err != nil {
		return failed(w, "%v", err), false
	}
	stop, changed := r.applyLink(ctx, x, acts)
	did = did || changed
	if stop != nil {
		return *stop, did
	}
	if rec := x.rec; rec != nil && rec.OriginalName != "" && target.Name == rec.OriginalName {
		rec.OriginalName, rec.Name = "", ""
	}
	if w.kernelSRIOV() && r.sriovPath != "" {
		// Without --sriov-config nothing is published, so nothing to check.
		dev, stop := r.kernelDevice(w, x.l)
		if stop != nil {
			return *stop, did
		}
		return outcome{w: w, state: v1alpha1.InterfaceConfigured, kernel: &dev}, did
	}
	return outcome{w: w, state: v1alpha1.InterfaceConfigured}, did
}

// kernelDevice is the PCI device of the ENI's interface l, to publish
// with the driver it has (SR-IOV without DPDK). The spec's
// dpdkPCIAddress must be that device: as for DPDK, the agent never
// publishes a device that is not the ENI's own (the node's primary NIC
// handed to pods would cut the node off).
func (r *reconciler) kernelDevice(w want, l link) (pciDevice, *outcome) {
	pci, err := r.sys.PCIAddressOf(l.Name)
	if err != nil {
		return pciDevice{}, stopWith(failed(w, "finding the PCI device of %s to publish as %s: %v", l.Name, w.Resource, err))
	}
	if msg := kernelDeviceProblem(w, l, pci); msg != "" {
		return pciDevice{}, stopWith(failed(w, "%s", msg))
	}
	dev, err := r.sys.device(pci)
	if err != nil {
		return dev, stopWith(failed(w, "%v", err))
	}
	if dev.Driver == "" {
		return dev, stopWith(pending(w, "PCI device %s of %s has no driver yet; waiting to publish it as %s", pci, l.Name, w.Resource))
	}
	return dev, nil
}

// kernelDeviceProblem says why the device at pci, the device of the
// ENI's interface l, must not be published for w, or "".
func kernelDeviceProblem(w want, l link, pci string) string {
	if w.PCIAddress == pci {
		return ""
	}
	return fmt.Sprintf("dpdkPCIAddress %s is not the device of this ENI's interface %s (MAC %s), which is %s; the agent publishes only the ENI's own device: fix dpdkPCIAddress",
		w.PCIAddress, l.Name, w.MAC, pci)
}

// stopWith is the outcome a step ends its interface's pass with.
func stopWith(o outcome) *outcome { return &o }

// restoreDriver gives rec's PCI device back to its original driver.
func (r *reconciler) restoreDriver(rec *deviceRecord) error {
	err := r.sys.Restore(rec.PCIAddress, rec.OriginalDriver, rec.BoundDriver)
	r.metrics.op("dpdk-restore", err)
	return err
}

// leaveDPDK handles DPDK switched off: the device goes back to its
// driver and its interface comes back, to be configured in this pass when
// it is back already. It returns the links as they are now, with x's
// link found among them, or the outcome that ends the pass (stop); did
// tells whether the host changed.
func (r *reconciler) leaveDPDK(ctx context.Context, x *iface, links []link) (fresh []link, stop *outcome, did bool) {
	w, rec := x.w, x.rec
	if err := r.restoreDriver(rec); err != nil {
		return links, stopWith(failed(w, "giving PCI device %s back to driver %q: %v", rec.PCIAddress, rec.OriginalDriver, err)), false
	}
	log.FromContext(ctx).Info("DPDK switched off: device given back to its driver", "eni", w.ENIID, "pci", rec.PCIAddress, "driver", rec.OriginalDriver)
	msg := fmt.Sprintf("PCI device %s given back to driver %q; waiting for its interface (MAC %s) to appear", rec.PCIAddress, rec.OriginalDriver, w.MAC)
	rec.BoundDriver, rec.OriginalDriver = "", ""
	if err := r.persist(x.next); err != nil {
		return links, stopWith(failed(w, "%v", err)), true
	}
	// A synchronous probe brings the interface back at once: configure
	// it in this pass.
	if fresh, err := r.host.links(); err == nil {
		links = fresh
	}
	l, found, err := r.eniLink(w, links)
	if err != nil {
		return links, stopWith(failed(w, "%v", err)), true
	}
	if !found {
		return links, stopWith(pending(w, "%s", msg)), true
	}
	x.l, x.found = l, true
	return links, nil, true
}

// eniLink is w's interface among links (findLink), refused with an error
// when it is not one the agent may configure (guard.refusal): the MAC
// address comes from a status anyone allowed to patch it can rewrite.
func (r *reconciler) eniLink(w want, links []link) (link, bool, error) {
	l, found, err := findLink(links, w.MAC)
	if err != nil || !found {
		return l, found, err
	}
	if why := r.guard.refusal(l, links); why != "" {
		return link{}, false, errors.New(refusedMessage(w, why))
	}
	return l, true, nil
}

// applyLink carries out the link's actions (rename, MTU, up). A rename
// is recorded first, creating x's device record when there is none. It
// stops at the first failure (stop); changed tells whether the host
// changed or a change was attempted.
func (r *reconciler) applyLink(ctx context.Context, x *iface, acts []linkAction) (stop *outcome, changed bool) {
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
			if err := r.persist(x.next); err != nil {
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

// specDeviceProblem says why the PCI device a NodeENI's dpdkPCIAddress
// names (dev, whose network interfaces are names) must not be bound for
// x, or "". The address is typed by a person for a whole node group: a wrong
// one must not take another interface (the node's primary, another ENI)
// away from the kernel. A device with a network interface is the ENI's
// only if that interface is the one found by the ENI's MAC; one without
// is taken only when it is bound to the DPDK driver already (by whoever
// ran DPDK before). A device this agent bound (x's record) was checked
// then.
func specDeviceProblem(x *iface, dev pciDevice, names []string) string {
	w, pci := x.w, dev.Address
	if x.rec != nil && x.rec.PCIAddress == pci && x.rec.BoundDriver != "" {
		return "" // checked when this agent bound it
	}
	if len(names) > 0 {
		if x.found && slices.Contains(names, x.l.Name) {
			return ""
		}
		return fmt.Sprintf("dpdkPCIAddress %s is the device of interface %s, not of this ENI's interface (MAC %s); the agent binds only the ENI's own device: fix dpdkPCIAddress or leave it empty",
			pci, strings.Join(names, ", "), w.MAC)
	}
	if dev.Driver == w.Driver {
		return ""
	}
	return fmt.Sprintf("dpdkPCIAddress %s has no network interface and is not bound to %s, so nothing shows it is this ENI's device (MAC %s); the agent does not bind it: fix dpdkPCIAddress or leave it empty",
		pci, w.Driver, w.MAC)
}

// configureDPDK binds the ENI's PCI device to the DPDK driver. The
// device's network interface disappears with the bind, so what the
// agent must know later (PCI address, original driver, name) is recorded
// first.
func (r *reconciler) configureDPDK(ctx context.Context, x *iface) (outcome, bool) {
	w, next := x.w, x.next
	pci, stop := r.dpdkPCIAddress(x)
	if stop != nil {
		return *stop, false
	}
	dev, stop := r.dpdkDevice(x, pci)
	if stop != nil {
		return *stop, false
	}
	if stop := r.recordDPDKDevice(x, pci); stop != nil {
		return *stop, false
	}
	rec := x.rec
	switch decideDPDK(dev, rec, w.Driver) {
	case dpdkInPlace:
		return outcome{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, false
	case dpdkTakeOver:
		// Bound by whoever ran DPDK before (the ENI Manager, dpdk-devbind,
		// this agent with its state file lost): recorded, not touched —
		// not even driver_override, which only matters at the next probe.
		// The original driver is not known; released, the device gets the
		// kernel's choice (its default driver).
		rec.BoundDriver = w.Driver
		if err := r.persist(next); err != nil {
			return failed(w, "%v", err), false
		}
		log.FromContext(ctx).Info("interface found bound to its DPDK driver already; taken over as it is", "eni", w.ENIID, "nodeENI", w.NodeENI, "pci", pci, "driver", w.Driver)
		return outcome{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, false
	}
	if rec.BoundDriver == "" {
		rec.OriginalDriver = dev.Driver
	}
	rec.BoundDriver = w.Driver
	if err := r.persist(next); err != nil {
		return failed(w, "%v", err), false
	}
	_, err := r.sys.Bind(pci, w.Driver)
	r.metrics.op("dpdk-bind", err)
	if err != nil {
		return failed(w, "binding PCI device %s to %s: %v", pci, w.Driver, err), true
	}
	log.FromContext(ctx).Info("interface bound to a DPDK driver", "eni", w.ENIID, "nodeENI", w.NodeENI, "pci", pci, "driver", w.Driver, "was", rec.OriginalDriver)
	return outcome{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, true
}

// dpdkDecision is what configureDPDK does with the ENI's PCI device.
type dpdkDecision int

const (
	dpdkInPlace  dpdkDecision = iota // bound to the driver, as this agent recorded: nothing to do
	dpdkTakeOver                     // bound to the driver by someone else: record it, write nothing
	dpdkBind                         // bound to another driver or none: bind it
)

func (d dpdkDecision) String() string {
	return [...]string{"in place", "take over", "bind"}[d]
}

// decideDPDK decides from the device as sysfs shows it (its driver
// link), not from what the agent remembers: a device bound to the wanted
// driver is left as it is whether or not this agent bound it, so a
// takeover or a lost state file costs no write and no flap.
func decideDPDK(dev pciDevice, rec *deviceRecord, driver string) dpdkDecision {
	switch {
	case dev.Driver != driver:
		return dpdkBind
	case rec != nil && rec.BoundDriver == driver:
		return dpdkInPlace
	}
	return dpdkTakeOver
}

// dpdkPCIAddress is the PCI device to bind: the spec's, else the one
// recorded, else the interface's. The node's primary interface (it
// carries a default route) is never bound.
func (r *reconciler) dpdkPCIAddress(x *iface) (string, *outcome) {
	w, l, found, rec := x.w, x.l, x.found, x.rec
	pci := w.PCIAddress
	if pci == "" && rec != nil {
		pci = rec.PCIAddress
	}
	if found && l.DefaultRoute {
		return "", stopWith(failed(w, "interface %s (MAC %s) carries a default route, so it looks like the node's primary interface; the agent does not bind it to a DPDK driver", l.Name, l.MAC))
	}
	if pci != "" {
		return pci, nil
	}
	if !found && w.ReportedPCI != "" && r.boundAlready(w, w.ReportedPCI) {
		// The state file was lost after this agent bound the device.
		return w.ReportedPCI, nil
	}
	if !found {
		return "", stopWith(pending(w, "waiting for an interface with MAC address %s to appear on the node", w.MAC))
	}
	pci, err := r.sys.PCIAddressOf(l.Name)
	if err != nil {
		return "", stopWith(failed(w, "finding the PCI device of %s for DPDK: %v", l.Name, err))
	}
	return pci, nil
}

// boundAlready tells whether the device at pci, the one this agent
// reported bound for the ENI, still is as it left it: bound to the DPDK
// driver with no network interface. Only then is the report trusted:
// taking such a device over writes nothing, and any other device is left
// to the spec's dpdkPCIAddress and its checks.
func (r *reconciler) boundAlready(w want, pci string) bool {
	dev, err := r.sys.device(pci)
	if err != nil || !dev.Exists || dev.Driver != w.Driver {
		return false
	}
	names, err := r.sys.InterfacesOf(pci)
	return err == nil && len(names) == 0
}

// dpdkDevice looks the PCI device up; it must exist and, when the spec
// names it, be the ENI's own (specDeviceProblem).
func (r *reconciler) dpdkDevice(x *iface, pci string) (pciDevice, *outcome) {
	w := x.w
	dev, err := r.sys.device(pci)
	if err != nil {
		return dev, stopWith(failed(w, "%v", err))
	}
	if !dev.Exists {
		return dev, stopWith(pending(w, "waiting for PCI device %s to appear on the node", pci))
	}
	if w.PCIAddress != "" {
		names, err := r.sys.InterfacesOf(pci)
		if err != nil {
			return dev, stopWith(failed(w, "%v", err))
		}
		if msg := specDeviceProblem(x, dev, names); msg != "" {
			return dev, stopWith(failed(w, "%s", msg))
		}
	}
	return dev, nil
}

// recordDPDKDevice records pci as the ENI's device (creating x's record
// when there is none); a different device bound before goes back to its
// driver first.
func (r *reconciler) recordDPDKDevice(x *iface, pci string) *outcome {
	rec := x.record()
	if rec.PCIAddress != "" && rec.PCIAddress != pci && rec.BoundDriver != "" {
		// dpdkPCIAddress changed: the device bound before goes back first.
		if err := r.restoreDriver(rec); err != nil {
			return stopWith(failed(x.w, "giving PCI device %s back to driver %q: %v", rec.PCIAddress, rec.OriginalDriver, err))
		}
		rec.BoundDriver, rec.OriginalDriver = "", ""
	}
	rec.PCIAddress = pci
	if x.found {
		rec.Name = x.l.Name
	}
	return nil
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
			err := r.sys.Restore(rec.PCIAddress, rec.OriginalDriver, rec.BoundDriver)
			r.metrics.op("dpdk-restore", err)
			if err != nil {
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

// entry is the status entry of one interface, from the host as it is now.
func (r *reconciler) entry(o outcome, links []link) v1alpha1.InterfaceStatus {
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

// publish puts the bound devices of resources named by NodeENIs into the
// SR-IOV device plugin's config and tells the plugin when it changed.
// Problems are reported on the interfaces concerned.
func (r *reconciler) publish(ctx context.Context, outs []outcome, entries map[string]v1alpha1.InterfaceStatus, next *nodeState) {
	resources, users := publishable(outs, entries)
	m, err := r.updateSRIOV(ctx, resources, next)
	if err != nil {
		users.failAll(entries, err.Error())
		return
	}
	for name, msg := range m.Conflicts {
		users.fail(entries, name, msg)
	}
	next.SRIOVOwned = m.Owned
	if err := r.reloadSRIOV(ctx); err != nil {
		users.failAll(entries, err.Error())
	}
	published := map[string]bool{}
	for _, ids := range users {
		for _, id := range ids {
			published[id] = true
		}
	}
	for _, o := range outs {
		e := entries[o.w.ENIID]
		if !published[o.w.ENIID] || e.State != v1alpha1.InterfaceConfigured {
			continue
		}
		e.DPDKResourceName = o.w.Resource
		if o.kernel != nil {
			// The device published with its kernel driver; dpdkBound stays false.
			e.DPDKPCIAddress = o.kernel.Address
		}
		entries[o.w.ENIID] = e
	}
}

// resourceUsers maps an SR-IOV resource to the ENIs whose devices it
// publishes.
type resourceUsers map[string][]string

// fail reports msg on the interfaces of resource.
func (u resourceUsers) fail(entries map[string]v1alpha1.InterfaceStatus, resource, msg string) {
	for _, id := range u[resource] {
		e := entries[id]
		e.State, e.Message = v1alpha1.InterfaceFailed, msg
		entries[id] = e
	}
}

// failAll reports msg on the interfaces of every resource.
func (u resourceUsers) failAll(entries map[string]v1alpha1.InterfaceStatus, msg string) {
	for name := range u {
		u.fail(entries, name, msg)
	}
}

// publishable gathers the resources NodeENIs name from their configured
// interfaces (sorted by name, addresses and drivers sorted), and which
// ENIs each one publishes: devices bound to a DPDK driver, and devices
// left with their kernel driver when DPDK is off (SR-IOV without DPDK),
// each with the driver sysfs shows.
func publishable(outs []outcome, entries map[string]v1alpha1.InterfaceStatus) ([]sriovResource, resourceUsers) {
	byName := map[string]*sriovResource{}
	users := resourceUsers{}
	for _, o := range outs {
		w := o.w
		if w.Resource == "" || entries[w.ENIID].State != v1alpha1.InterfaceConfigured {
			continue
		}
		var pci, driver string
		switch {
		case o.dpdk != nil && entries[w.ENIID].DPDKBound:
			pci, driver = o.dpdk.PCIAddress, o.dpdk.BoundDriver
		case o.kernel != nil:
			pci, driver = o.kernel.Address, o.kernel.Driver
		default:
			continue
		}
		res := byName[w.Resource]
		if res == nil {
			res = &sriovResource{Name: w.Resource}
			byName[w.Resource] = res
		}
		res.PCIAddresses = appendUnique(res.PCIAddresses, pci)
		res.Drivers = appendUnique(res.Drivers, driver)
		users[w.Resource] = append(users[w.Resource], w.ENIID)
	}
	var resources []sriovResource
	for _, res := range byName {
		slices.Sort(res.PCIAddresses)
		slices.Sort(res.Drivers)
		resources = append(resources, *res)
	}
	slices.SortFunc(resources, func(a, b sriovResource) int { return cmp.Compare(a.Name, b.Name) })
	return resources, users
}

// sriovAttempts bounds the merges of one pass when someone else keeps
// writing the device plugin config between the agent's read and write.
const sriovAttempts = 5

// updateSRIOV merges the agent's resources into the device plugin config
// and writes it when that changed something. The file is shared (an
// operator or another tool may edit it at any time): when it changed
// between the read and the write, the write is dropped and the merge done
// again from the new content, so the other writer's entries are kept.
func (r *reconciler) updateSRIOV(ctx context.Context, resources []sriovResource, next *nodeState) (sriovMerge, error) {
	logger := log.FromContext(ctx)
	for attempt := 1; ; attempt++ {
		existing, err := os.ReadFile(r.sriovPath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			logger.Error(err, "reading the SR-IOV device plugin config", "path", r.sriovPath)
			return sriovMerge{}, fmt.Errorf("reading the SR-IOV device plugin config %s: %w", r.sriovPath, err)
		}
		m, err := mergeSRIOV(existing, next.SRIOVOwned, resources)
		if err != nil {
			logger.Error(err, "merging into the SR-IOV device plugin config", "path", r.sriovPath)
			return sriovMerge{}, fmt.Errorf("SR-IOV device plugin config %s: %w", r.sriovPath, err)
		}
		if !m.Changed {
			return m, nil
		}
		err = r.writeSRIOV(ctx, m, existing, next)
		if !errors.Is(err, errConfigChanged) || attempt == sriovAttempts {
			return m, err
		}
		logger.Info("the SR-IOV device plugin config changed while the agent merged into it; merging again", "path", r.sriovPath)
	}
}

// writeSRIOV writes the merged device plugin config, unless the file no
// longer holds existing, what the merge read (errConfigChanged). The
// resources are recorded as owned before the write: a crash in between
// leaves an entry the agent knows to remove, never one it forgot it wrote.
func (r *reconciler) writeSRIOV(ctx context.Context, m sriovMerge, existing []byte, next *nodeState) error {
	logger := log.FromContext(ctx)
	next.SRIOVOwned = unionSorted(next.SRIOVOwned, m.Owned)
	if err := r.persist(next); err != nil {
		return err
	}
	if r.sriovRace != nil {
		r.sriovRace()
	}
	err := writeAtomicIf(r.sriovPath, m.Config, 0o644, func() []byte { return existing })
	r.metrics.op("sriov-write", err)
	if err != nil {
		logger.Error(err, "writing the SR-IOV device plugin config", "path", r.sriovPath)
		return fmt.Errorf("writing the SR-IOV device plugin config %s: %w", r.sriovPath, err)
	}
	logger.Info("SR-IOV device plugin config written", "path", r.sriovPath, "resources", m.Owned)
	r.reloadPending = true
	return nil
}

// reloadSRIOV tells the device plugin its config changed, when a write
// has not been told yet (a failed reload is retried on the next pass).
func (r *reconciler) reloadSRIOV(ctx context.Context) error {
	if !r.reloadPending {
		return nil
	}
	cfg, _ := os.ReadFile(r.sriovPath)
	err := r.reload.Do(cfg)
	r.metrics.op("sriov-reload", err)
	r.reloadPending = err != nil
	if err != nil {
		log.FromContext(ctx).Error(err, "telling the SR-IOV device plugin its config changed; will retry", "how", r.reload.String())
		return fmt.Errorf("the SR-IOV device plugin config is written, but telling the plugin failed (%s): %w", r.reload.String(), err)
	}
	return nil
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func unionSorted(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, v := range b {
		out = appendUnique(out, v)
	}
	slices.Sort(out)
	return out
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
