package eniplan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Tags are anyone's to write who may tag a subnet or group, so what a
// selector or name resolves to is a suggestion for new capacity only, as
// in Karpenter: a running ENI keeps the groups, and its zone the subnets,
// recorded when the operator gave them (ENINode spec.attachments[].selection,
// which only the operator writes) until the spec's sources change.

// SelectionHash digests the spec's subnet and security-group sources:
// a new digest is the spec's owner asking for the new resolution.
func SelectionHash(spec *v1alpha1.NodeENISpec) string {
	b, _ := json.Marshal(struct { // plain data: cannot fail
		SubnetID, SubnetName             string
		SubnetIDs, SubnetNames           []string
		SubnetSelector                   []v1alpha1.SubnetSelectorTerm
		SecurityGroupIDs, SecurityGroups []string
		SecurityGroupSelector            []v1alpha1.SecurityGroupSelectorTerm
	}{spec.SubnetID, spec.SubnetName, spec.SubnetIDs, spec.SubnetNames, spec.SubnetSelector,
		spec.SecurityGroupIDs, spec.SecurityGroupNames, spec.SecurityGroupSelector})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PinsOf are a NodeENI's selection records by ENI, read from the entries
// of each ENINode for its own node only.
func PinsOf(nodeENI string, held map[string]*v1alpha1.ENINode) map[string]v1alpha1.ENISelection {
	out := map[string]v1alpha1.ENISelection{}
	for node, en := range held {
		for _, a := range ShareOf(en, nodeENI) {
			if a.NodeID == node && a.Selection != nil {
				out[a.ENIID] = *a.Selection
			}
		}
	}
	return out
}

// ZonePins decides, zone by zone, the subnets that stand for the
// NodeENI's there, whatever the catalog resolves to now: those recorded
// under the current spec. A zone with no such record takes the
// resolution: new capacity, a changed spec, or ENIs without a record (of
// an earlier version, or created just before a crash: they cannot be
// told apart, and pinning the latter would keep the zone's other subnets
// from ever being created).
func ZonePins(enis []Owned, pins map[string]v1alpha1.ENISelection, hash string, zoneOf map[string]string) map[string][]string {
	out := map[string][]string{}
	for _, o := range enis {
		z, ok := zoneOf[o.SubnetID]
		if p, rec := pins[o.ID]; ok && rec && p.SpecHash == hash {
			out[z] = union(out[z], p.ZoneSubnets...)
		}
	}
	return out
}

func union(list []string, more ...string) []string {
	for _, s := range more {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// PinSubnets is the resolution with each pinned zone's subnets replaced
// by its pin, in the pin's order (the zone's device indexes); a pinned
// subnet gone from the VPC, or without the IPv6 CIDR the spec needs, is
// left out.
func PinSubnets(resolved []SubnetInfo, all []awstypes.Subnet, pins map[string][]string, needIPv6 bool) []SubnetInfo {
	var out []SubnetInfo
	done := map[string]bool{}
	emit := func(zone string) {
		done[zone] = true
		for _, id := range pins[zone] {
			i := slices.IndexFunc(all, func(s awstypes.Subnet) bool { return s.ID == id })
			if i < 0 || (needIPv6 && all[i].IPv6CIDR == "") {
				continue
			}
			s := all[i]
			out = append(out, SubnetInfo{ID: s.ID, Zone: s.AvailabilityZone, CIDR: s.CIDR, IPv6CIDR: s.IPv6CIDR})
		}
	}
	for _, s := range resolved {
		switch _, pinned := pins[s.Zone]; {
		case !pinned:
			out = append(out, s)
		case !done[s.Zone]:
			emit(s.Zone)
		}
	}
	for _, z := range slices.Sorted(maps.Keys(pins)) {
		if !done[z] {
			emit(z)
		}
	}
	return out
}

// groupsOf are the groups drift repair keeps an ENI at: its record's
// under the current spec, the resolution under a changed one, and what
// it carries for an ENI of an earlier version (or one just created,
// whose record is not written yet: it carries what it was created with).
func (in PlanInput) groupsOf(o Owned) []string {
	if p, ok := in.Pins[o.ID]; ok {
		if p.SpecHash == in.SelectionHash {
			return p.SecurityGroups
		}
		return in.SecurityGroups
	}
	have := slices.Clone(o.SecurityGroups)
	slices.Sort(have)
	return have
}

// SelectionOf is the record an ENI's entry carries. Under a changed spec
// whose resolution is incomplete the old record stays: nothing of the new
// spec is applied yet, and the next pass tries again.
func (in PlanInput) SelectionOf(o Owned) *v1alpha1.ENISelection {
	p, ok := in.Pins[o.ID]
	if ok && p.SpecHash != in.SelectionHash && (in.SecurityGroups == nil || !in.SubnetsComplete) {
		return &p
	}
	zone := in.ZoneSubnets[in.SubnetZones[o.SubnetID]]
	if len(zone) == 0 && ok {
		zone = p.ZoneSubnets
	}
	groups := in.groupsOf(o)
	if len(groups) == 0 && len(zone) == 0 {
		return nil
	}
	return &v1alpha1.ENISelection{SpecHash: in.SelectionHash, SecurityGroups: slices.Clone(groups), ZoneSubnets: slices.Clone(zone)}
}

// ZoneSets are the subnet IDs of each zone, in order.
func ZoneSets(subnets []SubnetInfo) map[string][]string {
	out := map[string][]string{}
	for _, s := range subnets {
		out[s.Zone] = append(out[s.Zone], s.ID)
	}
	return out
}
