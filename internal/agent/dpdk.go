package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// kernelDevice is the PCI device of the ENI's interface l, to publish
// with the driver it has (SR-IOV without DPDK). The spec's
// dpdkPCIAddress must be that device: as for DPDK, the agent never
// publishes a device that is not the ENI's own (the node's primary NIC
// handed to pods would cut the node off).
func (d *dpdkBinder) kernelDevice(w want, l link) (pciDevice, *configResult) {
	pci, err := d.sys.PCIAddressOf(l.Name)
	if err != nil {
		return pciDevice{}, stopWith(failed(w, "finding the PCI device of %s to publish as %s: %v", l.Name, w.Resource, err))
	}
	if msg := kernelDeviceProblem(w, l, pci); msg != "" {
		return pciDevice{}, stopWith(failed(w, "%s", msg))
	}
	dev, err := d.sys.device(pci)
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
func stopWith(o configResult) *configResult { return &o }

// restoreDriver gives rec's PCI device back to its original driver.
func (d *dpdkBinder) restoreDriver(rec *deviceRecord) error {
	err := d.sys.Restore(rec.PCIAddress, rec.OriginalDriver, rec.BoundDriver)
	d.metrics.op("dpdk-restore", err)
	return err
}

// leaveDPDK handles DPDK switched off: the device goes back to its
// driver and its interface comes back, to be configured in this pass when
// it is back already. It returns the links as they are now, with x's
// link found among them, or the outcome that ends the pass (stop); did
// tells whether the host changed.
func (d *dpdkBinder) leaveDPDK(ctx context.Context, x *iface, links []link) (fresh []link, stop *configResult, did bool) {
	w, rec := x.w, x.rec
	if err := d.restoreDriver(rec); err != nil {
		return links, stopWith(failed(w, "giving PCI device %s back to driver %q: %v", rec.PCIAddress, rec.OriginalDriver, err)), false
	}
	log.FromContext(ctx).Info("DPDK switched off: device given back to its driver", "eni", w.ENIID, "pci", rec.PCIAddress, "driver", rec.OriginalDriver)
	msg := fmt.Sprintf("PCI device %s given back to driver %q; waiting for its interface (MAC %s) to appear", rec.PCIAddress, rec.OriginalDriver, w.MAC)
	rec.BoundDriver, rec.OriginalDriver = "", ""
	if err := d.saved.persist(x.next); err != nil {
		return links, stopWith(failed(w, "%v", err)), true
	}
	// A synchronous probe brings the interface back at once: configure
	// it in this pass.
	if fresh, err := d.host.links(); err == nil {
		links = fresh
	}
	l, found, err := d.guard.eniLink(w, links)
	if err != nil {
		return links, stopWith(failed(w, "%v", err)), true
	}
	if !found {
		return links, stopWith(pending(w, "%s", msg)), true
	}
	x.l, x.found = l, true
	return links, nil, true
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
func (d *dpdkBinder) configureDPDK(ctx context.Context, x *iface) (configResult, bool) {
	w, next := x.w, x.next
	pci, stop := d.dpdkPCIAddress(x)
	if stop != nil {
		return *stop, false
	}
	dev, stop := d.dpdkDevice(x, pci)
	if stop != nil {
		return *stop, false
	}
	if stop := d.recordDPDKDevice(x, pci); stop != nil {
		return *stop, false
	}
	rec := x.rec
	switch decideDPDK(dev, rec, w.Driver) {
	case dpdkInPlace:
		return configResult{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, false
	case dpdkTakeOver:
		// Bound by whoever ran DPDK before (the ENI Manager, dpdk-devbind,
		// this agent with its state file lost): recorded, not touched —
		// not even driver_override, which only matters at the next probe.
		// The original driver is not known; released, the device gets the
		// kernel's choice (its default driver).
		rec.BoundDriver = w.Driver
		if err := d.saved.persist(next); err != nil {
			return failed(w, "%v", err), false
		}
		log.FromContext(ctx).Info("interface found bound to its DPDK driver already; taken over as it is", "eni", w.ENIID, "nodeENI", w.NodeENI, "pci", pci, "driver", w.Driver)
		return configResult{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, false
	}
	if rec.BoundDriver == "" {
		rec.OriginalDriver = dev.Driver
	}
	rec.BoundDriver = w.Driver
	if err := d.saved.persist(next); err != nil {
		return failed(w, "%v", err), false
	}
	_, err := d.sys.Bind(pci, w.Driver)
	d.metrics.op("dpdk-bind", err)
	if err != nil {
		return failed(w, "binding PCI device %s to %s: %v", pci, w.Driver, err), true
	}
	log.FromContext(ctx).Info("interface bound to a DPDK driver", "eni", w.ENIID, "nodeENI", w.NodeENI, "pci", pci, "driver", w.Driver, "was", rec.OriginalDriver)
	return configResult{w: w, state: v1alpha1.InterfaceConfigured, dpdk: rec}, true
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
func (d *dpdkBinder) dpdkPCIAddress(x *iface) (string, *configResult) {
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
	if !found && w.ReportedPCI != "" && d.boundAlready(w, w.ReportedPCI) {
		// The state file was lost after this agent bound the device.
		return w.ReportedPCI, nil
	}
	if !found {
		return "", stopWith(pending(w, "waiting for an interface with MAC address %s to appear on the node", w.MAC))
	}
	pci, err := d.sys.PCIAddressOf(l.Name)
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
func (d *dpdkBinder) boundAlready(w want, pci string) bool {
	dev, err := d.sys.device(pci)
	if err != nil || !dev.Exists || dev.Driver != w.Driver {
		return false
	}
	names, err := d.sys.InterfacesOf(pci)
	return err == nil && len(names) == 0
}

// dpdkDevice looks the PCI device up; it must exist and, when the spec
// names it, be the ENI's own (specDeviceProblem).
func (d *dpdkBinder) dpdkDevice(x *iface, pci string) (pciDevice, *configResult) {
	w := x.w
	dev, err := d.sys.device(pci)
	if err != nil {
		return dev, stopWith(failed(w, "%v", err))
	}
	if !dev.Exists {
		return dev, stopWith(pending(w, "waiting for PCI device %s to appear on the node", pci))
	}
	if w.PCIAddress != "" {
		names, err := d.sys.InterfacesOf(pci)
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
func (d *dpdkBinder) recordDPDKDevice(x *iface, pci string) *configResult {
	rec := x.record()
	if rec.PCIAddress != "" && rec.PCIAddress != pci && rec.BoundDriver != "" {
		// dpdkPCIAddress changed: the device bound before goes back first.
		if err := d.restoreDriver(rec); err != nil {
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
