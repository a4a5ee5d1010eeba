package nodeeni

import (
	"context"
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// catalogOnly is the EC2 interface with only the catalog answered: a
// subnet appears in the VPC after the first read.
type catalogOnly struct {
	EC2
	maxAges []time.Duration
}

func (c *catalogOnly) Catalog(_ context.Context, maxAge time.Duration) (ec2.Catalog, error) {
	c.maxAges = append(c.maxAges, maxAge)
	cat := ec2.Catalog{Subnets: []awstypes.Subnet{{ID: "subnet-1", AvailabilityZone: "z"}}, Groups: []awstypes.SecurityGroup{{ID: "sg-1", Name: "multus"}}}
	if len(c.maxAges) > 1 {
		cat.Subnets = append(cat.Subnets, awstypes.Subnet{ID: "subnet-new", AvailabilityZone: "z", Tags: map[string]string{"Name": "new"}})
	}
	return cat, nil
}

// A spec naming what the catalog does not hold re-reads it once, at the
// short interval (it may have just been created); one that resolves does
// not.
func TestResolveRereadsTheCatalogOnlyForWhatIsMissing(t *testing.T) {
	o := DefaultOptions()
	for _, c := range []struct {
		name    string
		spec    v1alpha1.NodeENISpec
		maxAges []time.Duration
		subnets int
	}{
		{"all found", v1alpha1.NodeENISpec{SubnetID: "subnet-1", SecurityGroupNames: []string{"multus"}}, []time.Duration{o.CatalogInterval}, 1},
		{"a new subnet", v1alpha1.NodeENISpec{SubnetNames: []string{"new"}, SecurityGroupIDs: []string{"sg-1"}},
			[]time.Duration{o.CatalogInterval, o.MinCatalogRefresh}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &catalogOnly{}
			r := &reconciler{ec2: f, opts: o}
			res, err := r.resolve(context.Background(), &c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Problems) != 0 || len(res.Subnets) != c.subnets {
				t.Fatalf("resolved %+v", res)
			}
			if len(f.maxAges) != len(c.maxAges) || f.maxAges[len(f.maxAges)-1] != c.maxAges[len(c.maxAges)-1] {
				t.Fatalf("catalog read with max ages %v, want %v", f.maxAges, c.maxAges)
			}
		})
	}
}
