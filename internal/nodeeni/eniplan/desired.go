package eniplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/internal/awsnode"
)

// SubnetInfo is a resolved subnet.
type SubnetInfo struct {
	ID, Zone, CIDR, IPv6CIDR string
}

// Want is one ENI a NodeENI needs: for a node, in one subnet of the
// node's zone.
type Want struct {
	Node, Instance, Zone, Subnet, CIDR string
	// Rank is the subnet's position among the NodeENI's subnets in this
	// zone (spec order): the ENI's offset from the base device index.
	Rank int
}

// Desired lists the ENIs the nodes need: one per node and subnet of the
// node's zone, in spec order. Nodes whose zone has none of the subnets are
// returned as blocked. Subnets of other zones are skipped, since EC2
// cannot attach an ENI across zones.
func Desired(nodes []awsnode.Identity, subnets []SubnetInfo) ([]Want, []Blocked) {
	byZone := map[string][]SubnetInfo{}
	for _, s := range subnets {
		byZone[s.Zone] = append(byZone[s.Zone], s)
	}
	sorted := append([]awsnode.Identity(nil), nodes...)
	slices.SortFunc(sorted, func(a, b awsnode.Identity) int { return strings.Compare(a.Name, b.Name) })
	var wants []Want
	var blocks []Blocked
	for _, n := range sorted {
		in := byZone[n.Zone]
		if len(in) == 0 {
			blocks = append(blocks, Blocked{Node: n.Name, Reason: ReasonNoSubnetInZone,
				Message: fmt.Sprintf("none of the NodeENI's subnets is in the node's zone %s; add (or tag, for subnetSelector) a subnet of that zone, or narrow the nodeSelector", n.Zone)})
			continue
		}
		for rank, s := range in {
			wants = append(wants, Want{Node: n.Name, Instance: n.Instance, Zone: n.Zone, Subnet: s.ID, CIDR: s.CIDR, Rank: rank})
		}
	}
	return wants, blocks
}

// RootCauses puts what the catalog could not find — a subnet or
// security group of the spec that does not exist in the VPC, reported
// without a node — on every matching node (nodes maps them to their
// instance), so each names the root cause. A missing subnet also
// replaces a node's NoSubnetInZone: the subnet not found may be the one
// meant for that zone, and "no subnet in your zone" would send the reader
// to the wrong fix; when other subnets were found (someFound), that none
// of them is in the node's zone is still said. Without matching nodes the
// problems stay as they are. Blocks already per node are kept.
func RootCauses(blocks []Blocked, nodes map[string]string, someFound bool) []Blocked {
	var missing []Blocked
	subnetMissing := false
	for _, b := range blocks {
		if notFoundInVPC(b) {
			missing = append(missing, b)
			subnetMissing = subnetMissing || (b.Reason != ReasonSecurityGroupNotFound && !b.group)
		}
	}
	if len(missing) == 0 || len(nodes) == 0 {
		return blocks
	}
	noZone := map[string]bool{}
	var out []Blocked
	for _, b := range blocks {
		switch {
		case notFoundInVPC(b):
			continue // said on every node below
		case b.Node != "" && b.Reason == ReasonNoSubnetInZone && subnetMissing:
			noZone[b.Node] = true
			continue
		}
		out = append(out, b)
	}
	for _, n := range slices.Sorted(maps.Keys(nodes)) {
		for _, m := range missing {
			b := Blocked{Node: n, Reason: m.Reason, Message: m.Message}
			if noZone[n] && someFound && m.Reason != ReasonSecurityGroupNotFound && !m.group {
				b.Message += "; none of the subnets found is in the node's zone"
			}
			out = append(out, b)
		}
	}
	return out
}

// notFoundInVPC reports whether a block says a subnet or security group
// of the spec is not in the VPC, a subnet cannot serve it (no IPv6) or a
// name of the spec is ambiguous:
// a NodeENI-wide problem.
func notFoundInVPC(b Blocked) bool {
	return b.Node == "" && (b.Reason == ReasonSubnetNotFound || b.Reason == ReasonSecurityGroupNotFound || b.Reason == ReasonSubnetHasNoIPv6 ||
		b.Reason == ReasonAmbiguousName)
}
