package eniplan

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

func TestResolveSelectors(t *testing.T) {
	subnets := []awstypes.Subnet{
		{ID: "subnet-1", AvailabilityZone: "a", CIDR: "10.0.0.0/24", Tags: map[string]string{"net": "multus", "tier": "data"}},
		{ID: "subnet-2", AvailabilityZone: "b", CIDR: "10.0.1.0/24", IPv6CIDR: "2600:1f14::/64", Tags: map[string]string{"net": "multus", "tier": "ctl"}},
		{ID: "subnet-3", AvailabilityZone: "a", CIDR: "10.0.2.0/24", Tags: map[string]string{"net": "storage"}},
		{ID: "subnet-4", AvailabilityZone: "c", CIDR: "10.0.3.0/24"},
	}
	groups := []awstypes.SecurityGroup{
		{ID: "sg-1", Name: "multus", Tags: map[string]string{"net": "multus"}},
		{ID: "sg-2", Name: "storage", Tags: map[string]string{"net": "storage"}},
		{ID: "sg-3", Name: "extra", Tags: map[string]string{"net": "multus", "role": "x"}},
	}
	tags := func(kv ...string) map[string]v1alpha1.TagValue {
		m := map[string]v1alpha1.TagValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = v1alpha1.TagValue(kv[i+1])
		}
		return m
	}
	cases := []struct {
		name       string
		spec       v1alpha1.NodeENISpec
		subnets    []string
		groups     []string // nil: not all found
		complete   bool
		problemHas string
	}{
		{name: "tags select every matching subnet, by ID within a term",
			spec: v1alpha1.NodeENISpec{SubnetSelector: []v1alpha1.SubnetSelectorTerm{{Tags: tags("net", "multus")}},
				SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Tags: tags("net", "multus")}}},
			subnets: []string{"subnet-1", "subnet-2"}, groups: []string{"sg-1", "sg-3"}, complete: true},
		{name: "every tag of a term must match; * matches any value",
			spec: v1alpha1.NodeENISpec{SubnetSelector: []v1alpha1.SubnetSelectorTerm{{Tags: tags("net", "multus", "tier", "ctl")}, {Tags: tags("net", "*")}},
				SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Tags: tags("net", "multus", "role", "*")}}},
			subnets: []string{"subnet-2", "subnet-1", "subnet-3"}, groups: []string{"sg-3"}, complete: true},
		{name: "terms by ID and name, combined with the other sources, without duplicates",
			spec: v1alpha1.NodeENISpec{SubnetID: "subnet-3", SubnetSelector: []v1alpha1.SubnetSelectorTerm{{ID: "subnet-4"}, {ID: "subnet-3"}},
				SecurityGroupIDs: []string{"sg-2"}, SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Name: "multus"}, {ID: "sg-2"}}},
			subnets: []string{"subnet-3", "subnet-4"}, groups: []string{"sg-1", "sg-2"}, complete: true},
		{name: "a term matching nothing is a problem and keeps ENIs (incomplete)",
			spec: v1alpha1.NodeENISpec{SubnetSelector: []v1alpha1.SubnetSelectorTerm{{Tags: tags("net", "multus")}, {Tags: tags("net", "gone")}},
				SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Tags: tags("net", "multus")}}},
			subnets: []string{"subnet-1", "subnet-2"}, groups: []string{"sg-1", "sg-3"}, problemHas: "subnetSelector[1] (tags net=gone)"},
		{name: "a group term matching nothing stops creates: not all groups found",
			spec: v1alpha1.NodeENISpec{SubnetSelector: []v1alpha1.SubnetSelectorTerm{{ID: "subnet-1"}},
				SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{Tags: tags("net", "multus")}, {Name: "nope"}}},
			subnets: []string{"subnet-1"}, complete: true, problemHas: `securityGroupSelector[1] (name "nope")`},
		{name: "a tag present with another value does not match",
			spec: v1alpha1.NodeENISpec{SubnetSelector: []v1alpha1.SubnetSelectorTerm{{Tags: tags("tier", "web")}},
				SecurityGroupSelector: []v1alpha1.SecurityGroupSelectorTerm{{ID: "sg-9"}}},
			problemHas: "subnetSelector[0] (tags tier=web)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ResolveIn(subnets, groups, &c.spec)
			checkResolved(t, r, c.subnets, c.groups)
			if c.complete != r.SubnetsComplete {
				t.Fatalf("complete %v; want %v", r.SubnetsComplete, c.complete)
			}
			var msgs []string
			for _, p := range r.Problems {
				msgs = append(msgs, p.Message)
			}
			if all := strings.Join(msgs, "; "); (c.problemHas == "") != (all == "") || !strings.Contains(all, c.problemHas) {
				t.Fatalf("problems %q; want one containing %q", all, c.problemHas)
			}
		})
	}
}

func TestRequireIPv6(t *testing.T) {
	subnets := []awstypes.Subnet{
		{ID: "subnet-1", AvailabilityZone: "a", CIDR: "10.0.0.0/24", IPv6CIDR: "2600:1f18::/64"},
		{ID: "subnet-2", AvailabilityZone: "b", CIDR: "10.0.1.0/24"},
	}
	groups := []awstypes.SecurityGroup{{ID: "sg-1", Name: "g"}}
	spec := v1alpha1.NodeENISpec{SubnetIDs: []string{"subnet-1", "subnet-2"}, SecurityGroupIDs: []string{"sg-1"}}
	if r := RequireIPv6(ResolveIn(subnets, groups, &spec), &spec); len(r.Subnets) != 2 || !r.SubnetsComplete || len(r.Problems) != 0 {
		t.Fatalf("no IPv6 asked: %+v", r)
	}
	spec.IPv6PrefixCount = 1
	r := RequireIPv6(ResolveIn(subnets, groups, &spec), &spec)
	if len(r.Subnets) != 1 || r.Subnets[0].ID != "subnet-1" || r.SubnetsComplete || len(r.Problems) != 1 ||
		r.Problems[0].Reason != ReasonSubnetHasNoIPv6 || !strings.Contains(r.Problems[0].Message, "subnet-2") {
		t.Fatalf("IPv6 asked: %+v", r)
	}
}

func TestWithOthersConditions(t *testing.T) {
	c := func(typ, reason string) metav1.Condition { return metav1.Condition{Type: typ, Reason: reason} }
	mine := []metav1.Condition{c(v1alpha1.ConditionReady, "Attached"), c(v1alpha1.ConditionPodAddressesRegistered, "stale")}
	theirs := []metav1.Condition{c(v1alpha1.ConditionReady, "old"), c(v1alpha1.ConditionPodAddressesRegistered, "Registered"), c(v1alpha1.ConditionAttachmentDefinitionsReady, "Synced")}
	got := WithOthersConditions(mine, theirs)
	want := []metav1.Condition{c(v1alpha1.ConditionReady, "Attached"), c(v1alpha1.ConditionPodAddressesRegistered, "Registered"), c(v1alpha1.ConditionAttachmentDefinitionsReady, "Synced")}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	// Another writer's condition removed meanwhile stays removed.
	if got := WithOthersConditions(mine, nil); len(got) != 1 || got[0].Type != v1alpha1.ConditionReady {
		t.Fatalf("%+v", got)
	}
}

// checkResolved fails unless a resolution found exactly subnets (by ID,
// in order) and groups (nil: not resolved).
func checkResolved(t *testing.T, r Resolved, subnets, groups []string) {
	t.Helper()
	var ids []string
	for _, s := range r.Subnets {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, subnets) || !slices.Equal(r.Groups, groups) || (groups == nil) != (r.Groups == nil) {
		t.Fatalf("subnets %v groups %v; want %v %v", ids, r.Groups, subnets, groups)
	}
}
