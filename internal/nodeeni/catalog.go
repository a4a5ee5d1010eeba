package nodeeni

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// catalog caches the VPC's subnets and security groups, so resolving a
// NodeENI's names and zones costs nothing per reconcile: two paginated
// Describe calls per catalog interval for the whole cluster, plus an
// early re-read (rate-limited) when a name or ID is not found.
type catalog struct {
	client     *ec2.Client
	interval   time.Duration
	minRefresh time.Duration

	mu      sync.Mutex
	at      time.Time
	subnets []ec2.Subnet
	groups  []ec2.SecurityGroup
}

// resolved is a NodeENI's subnets and security groups.
type resolved struct {
	Subnets []subnetInfo
	// Groups is sorted; nil when any group was not found.
	Groups []string
	// Problems say what was not found, for the Degraded condition.
	Problems []blocked
	// SubnetsComplete is false when a subnet source was not found.
	SubnetsComplete bool
}

func (c *catalog) load(ctx context.Context, force bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	age := time.Since(c.at)
	if !c.at.IsZero() && age < c.interval && (!force || age < c.minRefresh) {
		return nil
	}
	subnets, err := c.client.Subnets(ctx)
	if err != nil {
		return fmt.Errorf("listing the VPC's subnets: %w", err)
	}
	groups, err := c.client.SecurityGroups(ctx)
	if err != nil {
		return fmt.Errorf("listing the VPC's security groups: %w", err)
	}
	c.subnets, c.groups, c.at = subnets, groups, time.Now()
	return nil
}

// resolve looks a spec's subnets and groups up, re-reading the VPC once
// when something is missing (it may have just been created).
func (c *catalog) resolve(ctx context.Context, spec *v1alpha1.NodeENISpec) (resolved, error) {
	if err := c.load(ctx, false); err != nil {
		return resolved{}, err
	}
	r := c.lookup(spec)
	if len(r.Problems) > 0 {
		if err := c.load(ctx, true); err != nil {
			return resolved{}, err
		}
		r = c.lookup(spec)
	}
	return r, nil
}

func (c *catalog) lookup(spec *v1alpha1.NodeENISpec) resolved {
	c.mu.Lock()
	defer c.mu.Unlock()
	return resolveIn(c.subnets, c.groups, spec)
}

// resolveIn resolves a spec against a VPC's subnets and groups: IDs must
// exist in the VPC, a subnet name matches every subnet with that Name tag
// and a group name the group of that name. Order follows the spec (IDs
// first, then names), duplicates dropped: it decides device indexes.
func resolveIn(subnets []ec2.Subnet, groups []ec2.SecurityGroup, spec *v1alpha1.NodeENISpec) resolved {
	r := resolved{SubnetsComplete: true}
	r.resolveSubnets(subnets, spec)
	r.resolveGroups(groups, spec)
	return r
}

func (r *resolved) missing(reason, msg string) {
	r.Problems = append(r.Problems, blocked{Reason: reason, Message: msg})
}

// resolveSubnets finds the spec's subnets by ID and by Name tag, each
// once, in the spec's order; one not found makes the set incomplete.
func (r *resolved) resolveSubnets(subnets []ec2.Subnet, spec *v1alpha1.NodeENISpec) {
	seen := map[string]bool{}
	add := func(s ec2.Subnet) {
		if !seen[s.ID] {
			seen[s.ID] = true
			r.Subnets = append(r.Subnets, subnetInfo{ID: s.ID, Zone: s.AvailabilityZone, CIDR: s.CIDR})
		}
	}
	ids := append([]string(nil), spec.SubnetIDs...)
	if spec.SubnetID != "" {
		ids = append([]string{spec.SubnetID}, ids...)
	}
	for _, id := range ids {
		i := slices.IndexFunc(subnets, func(s ec2.Subnet) bool { return s.ID == id })
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
		found := false
		for _, s := range subnets { // subnets come sorted by ID: a stable order
			if s.Tags["Name"] == name {
				add(s)
				found = true
			}
		}
		if !found {
			r.SubnetsComplete = false
			r.missing(ReasonSubnetNotFound, fmt.Sprintf("no subnet of the cluster's VPC has the Name tag %q; fix subnetName(s) or tag the subnet", name))
		}
	}
}

// resolveGroups finds the spec's security groups by ID and by name. Groups
// stays nil unless every one is found: creating with some missing would
// open the ENI wider than the spec says.
func (r *resolved) resolveGroups(groups []ec2.SecurityGroup, spec *v1alpha1.NodeENISpec) {
	gs := []string{}
	ok := true
	for _, id := range spec.SecurityGroupIDs {
		if !slices.ContainsFunc(groups, func(g ec2.SecurityGroup) bool { return g.ID == id }) {
			ok = false
			r.missing(ReasonSecurityGroupNotFound, fmt.Sprintf("security group %s is not in the cluster's VPC; fix the ID", id))
		}
		gs = append(gs, id)
	}
	for _, name := range spec.SecurityGroupNames {
		found := false
		for _, g := range groups {
			if g.Name == name {
				found = true
				gs = append(gs, g.ID)
			}
		}
		if !found {
			ok = false
			r.missing(ReasonSecurityGroupNotFound, fmt.Sprintf("no security group named %q in the cluster's VPC; fix securityGroupNames", name))
		}
	}
	if ok {
		slices.Sort(gs)
		r.Groups = slices.Compact(gs)
	}
}
