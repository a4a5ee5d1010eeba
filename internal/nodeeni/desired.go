package nodeeni

import (
	"fmt"
	"sort"
)

// subnetInfo is a resolved subnet.
type subnetInfo struct {
	ID, Zone, CIDR string
}

// want is one ENI a NodeENI needs: for a node, in one subnet of the
// node's zone.
type want struct {
	Node, Instance, Zone, Subnet, CIDR string
	// Rank is the subnet's position among the NodeENI's subnets in this
	// zone (spec order): the ENI's offset from the base device index.
	Rank int
}

// desired lists the ENIs the nodes need: one per node and subnet of the
// node's zone, in spec order. Nodes whose zone has none of the subnets are
// returned as blocked. Subnets of other zones are skipped, since EC2
// cannot attach an ENI across zones.
func desired(nodes []nodeInfo, subnets []subnetInfo) ([]want, []blocked) {
	byZone := map[string][]subnetInfo{}
	for _, s := range subnets {
		byZone[s.Zone] = append(byZone[s.Zone], s)
	}
	sorted := append([]nodeInfo(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var wants []want
	var blocks []blocked
	for _, n := range sorted {
		in := byZone[n.Zone]
		if len(in) == 0 {
			blocks = append(blocks, blocked{Node: n.Name, Reason: ReasonNoSubnetInZone,
				Message: fmt.Sprintf("none of the NodeENI's subnets is in the node's zone %s; add a subnet of that zone or narrow the nodeSelector", n.Zone)})
			continue
		}
		for rank, s := range in {
			wants = append(wants, want{Node: n.Name, Instance: n.Instance, Zone: n.Zone, Subnet: s.ID, CIDR: s.CIDR, Rank: rank})
		}
	}
	return wants, blocks
}
