package agent

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// DefaultDPDKDriver is the driver an interface is bound to when its
// NodeENI enables DPDK without naming one.
const DefaultDPDKDriver = "vfio-pci"

// want is what one ENI attached to this node should look like on the host.
type want struct {
	NodeENI     string
	ENIID       string
	MAC         string // normalized: lower case, colon separated
	DeviceIndex int32
	MTU         int32  // 0: leave the MTU alone
	Name        string // "": keep the kernel's name
	DPDK        bool
	Driver      string // DPDK driver, when DPDK
	Resource    string // SR-IOV device plugin resource (prefix/name), optional
	PCIAddress  string // from the spec; "" means: found through the interface
	// ReportedPCI is the device this node's agent last reported bound for
	// the ENI (its ENINode's status.interfaces entry): how a bound device, whose
	// interface is gone, is found again when the state file was lost.
	ReportedPCI string
}

// kernelSRIOV tells a want that publishes its interface, left with its
// kernel driver, as an SR-IOV device plugin resource: DPDK off, a
// resource and the device's PCI address named (the original ENI
// Manager's case 2; without the address it published nothing, and
// neither does the agent).
func (w want) kernelSRIOV() bool {
	return !w.DPDK && w.Resource != "" && w.PCIAddress != ""
}

// desired lists what this node should have, from its ENINode: one want
// per ENI attached to the node, joined to the spec of the NodeENI it
// serves, sorted by NodeENI and device index. Attachments still being
// created have nothing on the host yet; attachments being detached or
// deleted, and those whose NodeENI is gone or being deleted, are left
// out, so their interfaces are released as if already gone.
//
// The entries an operator of an earlier version wrote to NodeENI
// status.attachments for the node count too, for ENIs the ENINode does
// not list: during an upgrade, an agent that starts before the operator
// has written the node's ENINode must not release interfaces in use.
// The operator drops those entries once the node's agent reports in its
// ENINode.
func desired(node string, en *v1alpha1.ENINode, nes []v1alpha1.NodeENI, defaultDriver string) []want {
	var entries []v1alpha1.ENIAttachment
	var reports []v1alpha1.InterfaceStatus
	if en != nil {
		entries, reports = en.Spec.Attachments, en.Status.Interfaces
	}
	if defaultDriver == "" {
		defaultDriver = DefaultDPDKDriver
	}
	live := make(map[string]*v1alpha1.NodeENI, len(nes))
	for i := range nes {
		if nes[i].DeletionTimestamp.IsZero() {
			live[nes[i].Name] = &nes[i]
		}
	}
	reported := map[string]string{}
	for _, e := range reports {
		if e.DPDKBound && pciAddressPattern.MatchString(e.DPDKPCIAddress) {
			reported[e.ENIID] = e.DPDKPCIAddress
		}
	}
	var out []want
	for _, a := range withEarlierEntries(node, entries, nes) {
		ne := live[a.NodeENI]
		// An entry naming another node is not this node's to configure,
		// whoever wrote it into this node's ENINode.
		if ne == nil || a.NodeID != node || a.Status != v1alpha1.AttachmentAttached || a.MACAddress == "" {
			continue
		}
		base := max(ne.Spec.DeviceIndex, 1)
		w := want{
			NodeENI: ne.Name, ENIID: a.ENIID, MAC: normalizeMAC(a.MACAddress), DeviceIndex: a.DeviceIndex,
			MTU: ne.Spec.MTU, Name: stableName(ne.Spec.InterfaceName, a.DeviceIndex, base),
			DPDK: ne.Spec.EnableDPDK, Resource: ne.Spec.DPDKResourceName,
		}
		// The address matters to DPDK (the device to bind) and to SR-IOV
		// without DPDK (the kernel device to publish, as the original's
		// case 2 asks for it).
		w.PCIAddress = strings.ToLower(ne.Spec.DPDKPCIAddress)
		if w.DPDK {
			w.Driver = cmp.Or(ne.Spec.DPDKDriver, defaultDriver)
			w.ReportedPCI = reported[a.ENIID]
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b want) int {
		return cmp.Or(cmp.Compare(a.NodeENI, b.NodeENI), cmp.Compare(a.DeviceIndex, b.DeviceIndex), cmp.Compare(a.ENIID, b.ENIID))
	})
	return out
}

// withEarlierEntries adds to the ENINode's entries the node's entries of
// the NodeENIs' deprecated status.attachments for the ENIs it lacks.
func withEarlierEntries(node string, entries []v1alpha1.ENIAttachment, nes []v1alpha1.NodeENI) []v1alpha1.ENIAttachment {
	out := slices.Clone(entries)
	for _, ne := range nes {
		for _, a := range ne.Status.Attachments {
			if a.NodeID == node && !slices.ContainsFunc(out, func(e v1alpha1.ENIAttachment) bool { return e.ENIID == a.ENIID }) {
				a.NodeENI = ne.Name
				out = append(out, a)
			}
		}
	}
	return out
}

// stableName is the host name of the ENI at index, when the NodeENI asks
// for one: the ENI at the NodeENI's base index gets the name as is, the
// others the offset appended, so every node of a zone has the same names.
func stableName(name string, index, base int32) string {
	if name == "" {
		return ""
	}
	off := index - base
	switch {
	case off == 0:
		return name
	case off > 0:
		return name + strconv.Itoa(int(off))
	default:
		// Not produced by the operator (indexes grow from the base), but
		// still one distinct name per index.
		return name + "i" + strconv.Itoa(int(index))
	}
}

// normalizeMAC returns the canonical form of a MAC address, or the input
// lower-cased when it does not parse (it then matches nothing).
func normalizeMAC(s string) string {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return strings.ToLower(s)
	}
	return hw.String()
}

// conflicts finds wants that cannot all be honoured on one host: two ENIs
// with the same MAC, or the same name asked for twice. The later want (in
// the sorted order) gets the message; the first keeps its chance.
func conflicts(ws []want) map[string]string {
	out := map[string]string{}
	macs := map[string]want{}
	names := map[string]want{}
	for _, w := range ws {
		if o, ok := macs[w.MAC]; ok {
			out[w.ENIID] = fmt.Sprintf("MAC address %s is also the address of ENI %s (NodeENI %s)", w.MAC, o.ENIID, o.NodeENI)
			continue
		}
		macs[w.MAC] = w
		if w.Name == "" || w.DPDK {
			continue
		}
		if o, ok := names[w.Name]; ok {
			out[w.ENIID] = fmt.Sprintf("interface name %q is also asked for by ENI %s (NodeENI %s)", w.Name, o.ENIID, o.NodeENI)
			continue
		}
		names[w.Name] = w
	}
	return out
}
