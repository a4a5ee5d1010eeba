package eniplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Resolved is a NodeENI's subnets and security groups.
type Resolved struct {
	Subnets []SubnetInfo
	// Groups is sorted; nil when any group was not found.
	Groups []string
	// Problems say what was not found, for the Degraded condition.
	Problems []Blocked
	// SubnetsComplete is false when a subnet source was not found.
	SubnetsComplete bool
	// All are the VPC's subnets, for the zones of ENIs and their pins.
	All []awstypes.Subnet
}

// ResolveIn resolves a spec against a VPC's subnets and groups: IDs must
// exist in the VPC, a subnet name matches every subnet with that Name tag,
// a group name the group of that name and a selector term every subnet or
// group it matches. Order follows the spec (IDs, then names, then
// selector terms; within a name or term, by ID), duplicates dropped: it
// decides device indexes.
func ResolveIn(subnets []awstypes.Subnet, groups []awstypes.SecurityGroup, spec *v1alpha1.NodeENISpec) Resolved {
	r := Resolved{SubnetsComplete: true, All: subnets}
	r.resolveSubnets(subnets, spec)
	r.resolveGroups(groups, spec)
	return r
}

// ReasonSubnetHasNoIPv6: the spec asks for IPv6 addresses or prefixes
// in a subnet without an IPv6 CIDR.
const ReasonSubnetHasNoIPv6 = "SubnetHasNoIPv6"

// RequireIPv6 takes the subnets without an IPv6 CIDR out of a resolution
// when the spec asks for IPv6, each a problem: EC2 would refuse every
// create there. Their ENIs are kept (as for a subnet not found).
func RequireIPv6(r Resolved, spec *v1alpha1.NodeENISpec) Resolved {
	if spec.IPv6AddressCount == 0 && spec.IPv6PrefixCount == 0 {
		return r
	}
	var keep []SubnetInfo
	for _, s := range r.Subnets {
		if s.IPv6CIDR != "" {
			keep = append(keep, s)
			continue
		}
		r.SubnetsComplete = false
		r.missing(ReasonSubnetHasNoIPv6, fmt.Sprintf("subnet %s has no IPv6 CIDR, and ipv6AddressCount or ipv6PrefixCount asks for IPv6; associate an IPv6 CIDR with it, or leave it out", s.ID))
	}
	r.Subnets = keep
	return r
}

func (r *Resolved) missing(reason, msg string) {
	r.Problems = append(r.Problems, Blocked{Reason: reason, Message: msg})
}

// resolveSubnets finds the spec's subnets by ID and by Name tag, each
// once, in the spec's order; one not found makes the set incomplete.
func (r *Resolved) resolveSubnets(subnets []awstypes.Subnet, spec *v1alpha1.NodeENISpec) {
	seen := map[string]bool{}
	add := func(s awstypes.Subnet) {
		if !seen[s.ID] {
			seen[s.ID] = true
			r.Subnets = append(r.Subnets, SubnetInfo{ID: s.ID, Zone: s.AvailabilityZone, CIDR: s.CIDR, IPv6CIDR: s.IPv6CIDR})
		}
	}
	ids := append([]string(nil), spec.SubnetIDs...)
	if spec.SubnetID != "" {
		ids = append([]string{spec.SubnetID}, ids...)
	}
	for _, id := range ids {
		i := slices.IndexFunc(subnets, func(s awstypes.Subnet) bool { return s.ID == id })
		if i < 0 {
			r.SubnetsComplete = false
			r.missing(ReasonSubnetNotFound, fmt.Sprintf("subnet %s is not in the cluster's VPC; fix the ID", id))
			continue
		}
		add(subnets[i])
	}
	names := append([]string(nil), spec.SubnetNames...)
	if spec.SubnetName != "" {
		names = append([]string{spec.SubnetName}, names...)
	}
	for _, name := range names {
		var matches []awstypes.Subnet
		for _, s := range subnets { // subnets come sorted by ID: a stable order
			if s.Tags["Name"] == name {
				matches = append(matches, s)
			}
		}
		if zone, ids := crowdedZone(matches); zone != "" {
			r.SubnetsComplete = false // the ENIs of its subnets are kept
			r.Problems = append(r.Problems, ambiguousSubnetName(name, zone, ids))
			continue
		}
		for _, s := range matches {
			add(s)
		}
		if len(matches) == 0 {
			r.SubnetsComplete = false
			r.missing(ReasonSubnetNotFound, fmt.Sprintf("no subnet of the cluster's VPC has the Name tag %q; fix subnetName(s) or tag the subnet", name))
		}
	}
	for i, term := range spec.SubnetSelector {
		found := false
		for _, s := range subnets {
			if term.ID != "" && s.ID == term.ID || term.ID == "" && matchesTags(term.Tags, s.Tags) {
				add(s)
				found = true
			}
		}
		if !found {
			r.SubnetsComplete = false
			r.missing(ReasonSubnetNotFound, fmt.Sprintf("no subnet of the cluster's VPC matches subnetSelector[%d] (%s); fix the term or tag the subnet", i, termText(term.ID, "", term.Tags)))
		}
	}
}

// matchesTags reports whether tags carry every wanted key, with the
// wanted value or any value where "*" is wanted (Karpenter's rule).
func matchesTags(want map[string]v1alpha1.TagValue, tags map[string]string) bool {
	for k, v := range want {
		got, ok := tags[k]
		if !ok || (v != "*" && string(v) != got) {
			return false
		}
	}
	return true
}

func groupMatches(term v1alpha1.SecurityGroupSelectorTerm, g awstypes.SecurityGroup) bool {
	switch {
	case term.ID != "":
		return g.ID == term.ID
	case term.Name != "":
		return g.Name == term.Name
	}
	return matchesTags(term.Tags, g.Tags)
}

// termText says what a selector term asks for, for a message.
func termText(id, name string, tags map[string]v1alpha1.TagValue) string {
	switch {
	case id != "":
		return "id " + id
	case name != "":
		return fmt.Sprintf("name %q", name)
	}
	keys := slices.Sorted(maps.Keys(tags))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", k, tags[k])
	}
	return "tags " + strings.Join(parts, ",")
}

// resolveGroups finds the spec's security groups by ID and by name. Groups
// stays nil unless every one is found: creating with some missing would
// open the ENI wider than the spec says.
func (r *Resolved) resolveGroups(groups []awstypes.SecurityGroup, spec *v1alpha1.NodeENISpec) {
	gs := []string{}
	ok := true
	for _, id := range spec.SecurityGroupIDs {
		if !slices.ContainsFunc(groups, func(g awstypes.SecurityGroup) bool { return g.ID == id }) {
			ok = false
			r.missing(ReasonSecurityGroupNotFound, fmt.Sprintf("security group %s is not in the cluster's VPC; fix the ID", id))
		}
		gs = append(gs, id)
	}
	for _, name := range spec.SecurityGroupNames {
		var matches []string
		for _, g := range groups {
			if g.Name == name {
				matches = append(matches, g.ID)
			}
		}
		switch {
		case len(matches) == 0:
			ok = false
			r.missing(ReasonSecurityGroupNotFound, fmt.Sprintf("no security group named %q in the cluster's VPC; fix securityGroupNames", name))
		case len(matches) > 1:
			ok = false
			r.Problems = append(r.Problems, ambiguousGroupName(fmt.Sprintf("security group name %q", name), matches))
		}
		gs = append(gs, matches...)
	}
	for i, term := range spec.SecurityGroupSelector {
		var matches []string
		for _, g := range groups {
			if groupMatches(term, g) {
				matches = append(matches, g.ID)
			}
		}
		switch what := fmt.Sprintf("securityGroupSelector[%d] (%s)", i, termText(term.ID, term.Name, term.Tags)); {
		case len(matches) == 0:
			ok = false
			r.missing(ReasonSecurityGroupNotFound, fmt.Sprintf("no security group of the cluster's VPC matches %s; fix the term or tag the group", what))
		case len(matches) > 1 && term.Name != "":
			ok = false
			r.Problems = append(r.Problems, ambiguousGroupName(what, matches))
		}
		gs = append(gs, matches...)
	}
	if ok {
		slices.Sort(gs)
		r.Groups = slices.Compact(gs)
	}
}
