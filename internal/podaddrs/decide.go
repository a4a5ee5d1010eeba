package podaddrs

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// Reasons a pod's address is not registered (events, the
// PodAddressesRegistered condition).
const (
	ReasonAddressLimit    = "AddressLimitReached"
	ReasonNotInSubnet     = "AddressNotInSubnet"
	ReasonAddressTaken    = "AddressTaken"
	ReasonBadNetworkState = "InvalidNetworkStatus"
	ReasonAssignFailed    = "AssignFailed"
)

// iface is one of the node's attached ENIs, as EC2 shows it now.
type iface struct {
	ENI, NodeENI, MAC string
	// Registers is whether its NodeENI asks for pod addresses.
	Registers        bool
	Subnet4, Subnet6 netip.Prefix
	Primary          netip.Addr
	// Held are the ENI's secondary IPv4 and IPv6 addresses.
	Held map[netip.Addr]bool
	// Free4 and Free6 are how many more addresses of each family the ENI
	// takes (the instance type's addresses per interface, less those held).
	Free4, Free6 int
}

// podClaim is what one pod's network status says it uses.
type podClaim struct {
	Pod      string // namespace/name
	Networks []attachedNetwork
	// Err is why its network status could not be read.
	Err error
	// NoStatus is set when Multus has not written the network status.
	NoStatus bool
}

// input is everything a node's decision depends on.
type input struct {
	Interfaces []iface
	// Unknown are ENIs of the node's attachments that EC2 does not show
	// (yet): their record entries are left as they are.
	Unknown map[string]bool
	Claims  []podClaim
	Record  []v1alpha1.PodAddress
	// HeldBy says which ENI holds an address in the VPC ("" none known).
	HeldBy func(netip.Addr) string
}

// refusal is a pod address not registered, and why.
type refusal struct {
	Pod, NodeENI, Reason, Message string
}

// decision is what one pass does on a node.
type decision struct {
	// Record is the record to write before any assignment: the old one
	// with the addresses about to be assigned added.
	Record []v1alpha1.PodAddress
	// Assign and Unassign are per ENI, addresses sorted.
	Assign, Unassign map[string][]netip.Addr
	// Stale are record entries to drop without a call: their ENI is no
	// longer the node's, or it no longer holds them.
	Stale   []string
	Refused []refusal
	// Taken are the addresses refused because another ENI holds them:
	// the node waits for them to be released there.
	Taken []netip.Addr
	// Registered counts, per NodeENI, the pod addresses in place or being
	// assigned.
	Registered map[string]int
}

// decide registers the addresses the node's pods claim on the ENIs whose
// MAC they name, within each ENI's subnet and free slots, and unassigns
// the recorded addresses no pod claims any more. It never unassigns an
// address the record does not hold, and records only addresses the ENI
// does not hold yet: an address someone else assigned stays theirs.
func decide(in input) decision {
	d := decision{Assign: map[string][]netip.Addr{}, Unassign: map[string][]netip.Addr{}, Registered: map[string]int{}}
	byMAC := registeringByMAC(in.Interfaces)
	byENI := map[string]*iface{}
	for i := range in.Interfaces {
		byENI[in.Interfaces[i].ENI] = &in.Interfaces[i]
	}
	recorded := map[netip.Addr]v1alpha1.PodAddress{}
	for _, r := range in.Record {
		if a, err := netip.ParseAddr(r.Address); err == nil {
			recorded[a] = r
		}
	}
	wanted := d.claimed(in, byMAC, recorded)
	d.Record = slices.Clone(in.Record)
	for _, w := range sortedWants(wanted) {
		f := byENI[w.ENI]
		r, isRecorded := recorded[w.Addr]
		switch {
		case f.Held[w.Addr]:
		case isRecorded && r.ENIID == w.ENI:
			d.Assign[w.ENI] = append(d.Assign[w.ENI], w.Addr) // recorded, not held: assign again
		case isRecorded:
			continue // moving from the ENI it is recorded on: unassigned there first (release), assigned here next pass
		default:
			if !d.takeSlot(f, w) {
				continue
			}
			d.Assign[w.ENI] = append(d.Assign[w.ENI], w.Addr)
			if !isRecorded {
				d.Record = append(d.Record, v1alpha1.PodAddress{Address: w.Addr.String(), ENIID: w.ENI, Pod: w.Pod})
			}
		}
		d.Registered[f.NodeENI]++
	}
	d.release(in, byENI, wanted)
	return d
}

// registeringByMAC indexes the interfaces whose NodeENI registers
// addresses by MAC: a pod's network names its interface by MAC.
func registeringByMAC(ifaces []iface) map[string]*iface {
	out := map[string]*iface{}
	for i := range ifaces {
		if f := &ifaces[i]; f.Registers {
			out[f.MAC] = f
		}
	}
	return out
}

// want is an address a pod claims on an ENI.
type want struct {
	Addr     netip.Addr
	ENI, Pod string
}

// claimed returns the addresses the pods claim on registering ENIs,
// refusing those outside the ENI's subnet or held by another ENI.
func (d *decision) claimed(in input, byMAC map[string]*iface, recorded map[netip.Addr]v1alpha1.PodAddress) map[netip.Addr]want {
	wanted := map[netip.Addr]want{}
	for _, c := range slices.SortedFunc(slices.Values(in.Claims), func(a, b podClaim) int { return cmp.Compare(a.Pod, b.Pod) }) {
		if c.Err != nil {
			d.Refused = append(d.Refused, refusal{Pod: c.Pod, Reason: ReasonBadNetworkState, Message: c.Err.Error()})
			continue
		}
		for _, n := range c.Networks {
			f := byMAC[n.MAC]
			if f == nil {
				continue // not an interface of a NodeENI that registers addresses
			}
			for _, a := range n.Addresses {
				if reason, msg := f.refuses(a, in.HeldBy, recorded); reason != "" {
					d.Refused = append(d.Refused, refusal{Pod: c.Pod, NodeENI: f.NodeENI, Reason: reason, Message: msg})
					if reason == ReasonAddressTaken {
						d.Taken = append(d.Taken, a)
					}
					continue
				}
				if _, dup := wanted[a]; !dup && a != f.Primary {
					wanted[a] = want{Addr: a, ENI: f.ENI, Pod: c.Pod}
				}
			}
		}
	}
	return wanted
}

// refuses says why an address cannot be registered on f (no reason when
// it can).
func (f *iface) refuses(a netip.Addr, heldBy func(netip.Addr) string, recorded map[netip.Addr]v1alpha1.PodAddress) (reason, msg string) {
	subnet := f.Subnet4
	if a.Is6() {
		subnet = f.Subnet6
	}
	if !subnet.IsValid() || !subnet.Contains(a) {
		return ReasonNotInSubnet, fmt.Sprintf("address %s is not in the subnet (%s) of ENI %s; fix the network's IPAM range", a, subnetText(subnet, a), f.ENI)
	}
	if other := heldBy(a); other != "" && other != f.ENI {
		if r, ok := recorded[a]; !ok || r.ENIID != other {
			return ReasonAddressTaken, fmt.Sprintf("address %s is held by %s, not this node's ENI %s; EC2 does not assign one address twice: once it is released there it is registered here (a pod's going from another node releases it); if it is not, fix the IPAM range or free the address", a, other, f.ENI)
		}
	}
	return "", ""
}

func subnetText(p netip.Prefix, a netip.Addr) string {
	if p.IsValid() {
		return p.String()
	}
	if a.Is6() {
		return "it has no IPv6 CIDR"
	}
	return "unknown"
}

// takeSlot counts a new address against its ENI's free slots, refusing
// it when there are none.
func (d *decision) takeSlot(f *iface, w want) bool {
	free := &f.Free4
	if w.Addr.Is6() {
		free = &f.Free6
	}
	if *free <= 0 {
		d.Refused = append(d.Refused, refusal{Pod: w.Pod, NodeENI: f.NodeENI, Reason: ReasonAddressLimit,
			Message: fmt.Sprintf("ENI %s holds as many addresses as its instance type allows; address %s is not registered: spread the pods over more nodes or give the NodeENI more subnets", f.ENI, w.Addr)})
		return false
	}
	*free--
	return true
}

// release unassigns the recorded addresses no pod claims on their ENI
// any more, and marks stale the entries whose ENI left or dropped them.
func (d *decision) release(in input, byENI map[string]*iface, wanted map[netip.Addr]want) {
	for _, r := range in.Record {
		a, err := netip.ParseAddr(r.Address)
		if err != nil {
			d.Stale = append(d.Stale, r.Address)
			continue
		}
		if w, ok := wanted[a]; ok && w.ENI == r.ENIID {
			continue
		}
		f := byENI[r.ENIID]
		switch {
		case in.Unknown[r.ENIID]:
		case f != nil && f.Held[a]:
			d.Unassign[r.ENIID] = append(d.Unassign[r.ENIID], a)
		default:
			d.Stale = append(d.Stale, r.Address)
		}
	}
	for _, m := range []map[string][]netip.Addr{d.Assign, d.Unassign} {
		for eni := range m {
			slices.SortFunc(m[eni], netip.Addr.Compare)
		}
	}
}

func sortedWants(m map[netip.Addr]want) []want {
	out := make([]want, 0, len(m))
	for _, w := range m {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b want) int { return a.Addr.Compare(b.Addr) })
	return out
}
