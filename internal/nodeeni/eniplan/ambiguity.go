package eniplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// A name is anyone's to copy: whoever may tag a subnet can give it
// another subnet's Name tag. So a name stands for one subnet per zone and
// one security group; one matching more is refused, never multiplied.

// crowdedZone returns the first zone (by name) in which more than one of
// a name's subnets lies, with those subnets' IDs; "" when none does.
func crowdedZone(matches []awstypes.Subnet) (string, []string) {
	byZone := map[string][]string{}
	for _, s := range matches {
		byZone[s.AvailabilityZone] = append(byZone[s.AvailabilityZone], s.ID)
	}
	zones := make([]string, 0, len(byZone))
	for z := range byZone {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, z := range zones {
		if len(byZone[z]) > 1 {
			return z, byZone[z]
		}
	}
	return "", nil
}

// ambiguousSubnetName is the problem of a subnet name matching several
// subnets of one zone.
func ambiguousSubnetName(name, zone string, ids []string) Blocked {
	return Blocked{Reason: ReasonAmbiguousName, Message: fmt.Sprintf("subnet name %q matches %d subnets in zone %s (%s); nothing is created from it and existing ENIs are kept: use subnetIDs, or give the subnets distinct Name tags",
		name, len(ids), zone, strings.Join(ids, ", "))}
}

// ambiguousGroupName is the problem of a group name (what names it:
// `security group name "x"` or a selector term) matching several groups.
func ambiguousGroupName(what string, matches []string) Blocked {
	return Blocked{Reason: ReasonAmbiguousName, group: true, Message: fmt.Sprintf("%s matches %d groups (%s); nothing is created and no ENI's groups are changed: use securityGroupIDs, or distinct group names",
		what, len(matches), strings.Join(matches, ", "))}
}
