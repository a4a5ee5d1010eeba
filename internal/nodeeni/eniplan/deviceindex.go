package eniplan

import "fmt"

// Occupant says who holds a device index on an instance.
type Occupant int

const (
	free    Occupant = iota
	Sibling          // another ENI of the same NodeENI on this node, staying
	Leaving          // an ENI of the same NodeENI being removed
	Foreign          // anything else: the primary ENI, the VPC CNI's, another NodeENI's
)

// ChooseIndex picks the device index for one ENI of a node.
//
// The ENI's natural index is base+rank (rank: its subnet's position among
// the NodeENI's subnets of the node's zone), so every node of a zone gets
// the same layout; preferred, when >= 0, is the index an already created
// ENI was meant for and wins over the natural one. When that index is held
// by a sibling of the same NodeENI (the subnets changed since it was
// attached), the lowest index from base up that nothing holds is taken
// instead: the layout stays without collisions and nothing is moved. When
// it is held by anything else, there is no fallback: silently taking
// another index would put the interface where the node's network
// configuration does not expect it, so the caller reports the node as
// blocked. A blocked choice returns the contested index (or -1) with the
// reason and message.
func ChooseIndex(base, rank, preferred int, taken map[int]Occupant) (int, string, string) {
	idx := base + rank
	if preferred >= base {
		idx = preferred
	}
	switch taken[idx] {
	case free:
		return idx, "", ""
	case Sibling:
		for i := base; i <= 63; i++ {
			if taken[i] == free {
				return i, "", ""
			}
		}
		return -1, ReasonENILimitReached, "no free device index left for the NodeENI's ENIs"
	case Leaving:
		return idx, ReasonWaitingForDetach, fmt.Sprintf("device index %d is held by an ENI of this NodeENI that is being removed", idx)
	default:
		return idx, ReasonDeviceIndexInUse, fmt.Sprintf("device index %d is taken by an interface this NodeENI does not own", idx)
	}
}
