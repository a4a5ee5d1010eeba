package podaddrs

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// Reasons a pod's address is not registered (events, the
// PodAddressesRegistered condition).
const (
	ReasonAddressLimit    = "AddressLimitReached"
	ReasonNotInSubnet     = "AddressNotInSubnet"
	ReasonAddressTaken    = "AddressTaken"
	ReasonBadNetworkState = "InvalidNetworkStatus"
	ReasonAssignFailed    = "AssignFailed"
	ReasonReserved        = "AddressReserved"
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
	Pod string // namespace/name
	// Created orders claims of one address: the older pod's wins.
	Created  time.Time
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
	// Verified are the holders EC2 gave in this pass for addresses about
	// to be recorded ("" none): the inventory may be older than a
	// moment ago, when another tool could have assigned them.
	Verified map[netip.Addr]string
	// Backoff are claims EC2 refused lately, refused again without a
	// call until they are due.
	Backoff map[claimKey]refusal
}

// claimKey is one address of one pod's claim: refusals back off per
// claim.
type claimKey struct {
	Pod  string
	Addr netip.Addr
}

// refusal is a pod address not registered, and why.
type refusal struct {
	Pod, NodeENI, Reason, Message string
	Addr                          netip.Addr
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
	// Verify are the addresses to read from EC2 before they are recorded
	// (then decide again with Verified).
	Verify []netip.Addr
	// EC2Refused are the claims refused on what EC2 said in this pass:
	// they back off.
	EC2Refused map[claimKey]refusal
	// Registered counts, per NodeENI, the pod addresses in place or being
	// assigned.
	Registered map[string]int
}

// decide registers the addresses the node's pods claim on the ENIs whose
// MAC they name, within each ENI's subnet and free slots, and unassigns
// the recorded addresses no pod claims any more. An address belongs to
// the pod it is recorded for while that pod claims it: no other pod's
// claim moves it. It never unassigns an address the record does not
// hold, and records only addresses EC2 showed no ENI holding in this
// pass (Verify, then Verified): an address someone else assigned stays
// theirs.
func decide(in input) decision {
	d := decision{Assign: map[string][]netip.Addr{}, Unassign: map[string][]netip.Addr{}, Registered: map[string]int{}, EC2Refused: map[claimKey]refusal{}}
	in.Interfaces = slices.Clone(in.Interfaces) // their free slots are counted down
	byMAC := registeringByMAC(in.Interfaces)
	byENI := map[string]*iface{}
	for i := range in.Interfaces {
		byENI[in.Interfaces[i].ENI] = &in.Interfaces[i]
	}
	recorded := map[netip.Addr]int{} // address -> index in the record
	for i, r := range in.Record {
		if a, err := netip.ParseAddr(r.Address); err == nil {
			recorded[a] = i
		}
	}
	wanted := d.claimed(in, byMAC, byENI, recorded)
	d.Record = slices.Clone(in.Record)
	for _, w := range sortedWants(wanted) {
		f := byENI[w.ENI]
		i, isRecorded := recorded[w.Addr]
		holder, verified := in.Verified[w.Addr]
		switch {
		case isRecorded && d.Record[i].ENIID != w.ENI:
			continue // moving from the ENI it is recorded on: unassigned there first (release), assigned here next pass
		case isRecorded:
			d.Record[i].Pod = w.Pod // its holder is gone: the pod an IPAM handed it to holds it now
			if !f.Held[w.Addr] {
				d.Assign[w.ENI] = append(d.Assign[w.ENI], w.Addr) // a crash before the call, or someone unassigned it
			}
		case f.Held[w.Addr] || verified && holder == w.ENI:
		case verified && holder != "":
			ref := refusal{Pod: w.Pod, NodeENI: f.NodeENI, Reason: ReasonAddressTaken, Addr: w.Addr, Message: takenMessage(w.Addr, holder, f.ENI)}
			d.Refused = append(d.Refused, ref)
			d.EC2Refused[claimKey{w.Pod, w.Addr}] = ref
			d.Taken = append(d.Taken, w.Addr)
			continue
		default:
			if !d.takeSlot(f, w) {
				continue
			}
			if !verified {
				d.Verify = append(d.Verify, w.Addr)
				continue
			}
			d.Assign[w.ENI] = append(d.Assign[w.ENI], w.Addr)
			d.Record = append(d.Record, v1alpha1.PodAddress{Address: w.Addr.String(), ENIID: w.ENI, Pod: w.Pod})
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
// each for one pod: the pod it is recorded for while that pod claims it,
// else the oldest claimant. The others are refused, as are addresses
// outside the ENI's subnet, reserved by AWS, held by another ENI or
// refused by EC2 lately.
func (d *decision) claimed(in input, byMAC, byENI map[string]*iface, recorded map[netip.Addr]int) map[netip.Addr]want {
	claims := slices.SortedFunc(slices.Values(in.Claims), func(a, b podClaim) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Pod, b.Pod))
	})
	claimsOf := claimedOn(claims, byMAC)
	wanted := map[netip.Addr]want{}
	for _, c := range claims {
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
				if a == f.Primary {
					continue // the ENI's own address: a pod that has the whole ENI (host-device)
				}
				holder, holderNodeENI := "", ""
				if i, ok := recorded[a]; ok && in.Record[i].Pod != c.Pod && claimsOf[claimKey{in.Record[i].Pod, a}] {
					holder = in.Record[i].Pod
					if h := byENI[in.Record[i].ENIID]; h != nil && h.Registers {
						holderNodeENI = h.NodeENI
					}
				} else if w, ok := wanted[a]; ok && w.Pod != c.Pod {
					holder = w.Pod
				}
				if holder != "" {
					d.refuseForHolder(c.Pod, a, holder, f.NodeENI, holderNodeENI)
					continue
				}
				if ref := refuses(c.Pod, a, f, in, recorded); ref != nil {
					d.Refused = append(d.Refused, *ref)
					if ref.Reason == ReasonAddressTaken {
						d.Taken = append(d.Taken, a)
					}
					continue
				}
				if _, dup := wanted[a]; !dup {
					wanted[a] = want{Addr: a, ENI: f.ENI, Pod: c.Pod}
				}
			}
		}
	}
	return wanted
}

// claimedOn is every address each pod claims on a registering ENI.
func claimedOn(claims []podClaim, byMAC map[string]*iface) map[claimKey]bool {
	out := map[claimKey]bool{}
	for _, c := range claims {
		for _, n := range c.Networks {
			if byMAC[n.MAC] != nil {
				for _, a := range n.Addresses {
					out[claimKey{c.Pod, a}] = true
				}
			}
		}
	}
	return out
}

// refuseForHolder refuses pod an address another pod of the node holds
// or claimed first, on the claimant's NodeENI and on the holder's.
func (d *decision) refuseForHolder(pod string, a netip.Addr, holder, nodeENI, holderNodeENI string) {
	msg := fmt.Sprintf("address %s is pod %s's, which uses it on this node; pod %s is refused it: one address serves one pod. Fix the network's IPAM range, or the pod's network status", a, holder, pod)
	d.Refused = append(d.Refused, refusal{Pod: pod, NodeENI: nodeENI, Reason: ReasonAddressTaken, Addr: a, Message: msg})
	if holderNodeENI != "" && holderNodeENI != nodeENI {
		d.Refused = append(d.Refused, refusal{Pod: pod, NodeENI: holderNodeENI, Reason: ReasonAddressTaken, Addr: a, Message: msg})
	}
}

// refuses says why pod's address a cannot be registered on f (nil when
// it can).
func refuses(pod string, a netip.Addr, f *iface, in input, recorded map[netip.Addr]int) *refusal {
	out := func(reason, msg string) *refusal {
		return &refusal{Pod: pod, NodeENI: f.NodeENI, Reason: reason, Addr: a, Message: msg}
	}
	subnet := f.Subnet4
	if a.Is6() {
		subnet = f.Subnet6
	}
	if !subnet.IsValid() || !subnet.Contains(a) {
		return out(ReasonNotInSubnet, fmt.Sprintf("address %s is not in the subnet (%s) of ENI %s; fix the network's IPAM range", a, subnetText(subnet, a), f.ENI))
	}
	if ec2.ReservedAddress(subnet, a) {
		return out(ReasonReserved, fmt.Sprintf("address %s is one AWS reserves in subnet %s (its first four and its last); EC2 never assigns it: exclude it from the network's IPAM range", a, subnet))
	}
	if other := in.HeldBy(a); other != "" && other != f.ENI {
		if i, ok := recorded[a]; !ok || in.Record[i].ENIID != other {
			return out(ReasonAddressTaken, takenMessage(a, other, f.ENI))
		}
	}
	if r, ok := in.Backoff[claimKey{pod, a}]; ok {
		return &r
	}
	return nil
}

func takenMessage(a netip.Addr, other, eni string) string {
	return fmt.Sprintf("address %s is held by %s, not this node's ENI %s; EC2 does not assign one address twice: once it is released there it is registered here (a pod's going from another node releases it); if it is not, fix the IPAM range or free the address", a, other, eni)
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
