package nodeeni

import (
	"context"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// resolve looks a spec's subnets and groups up in the VPC's catalog (read
// every --catalog-interval for the whole process), re-reading it once,
// at most every MinCatalogRefresh, when something is missing: it may
// have just been created.
func (r *reconciler) resolve(ctx context.Context, spec *v1alpha1.NodeENISpec) (eniplan.Resolved, error) {
	c, err := r.ec2.Catalog(ctx, r.opts.CatalogInterval)
	if err != nil {
		return eniplan.Resolved{}, err
	}
	res := eniplan.ResolveIn(c.Subnets, c.Groups, spec)
	if len(res.Problems) > 0 {
		if c, err = r.ec2.Catalog(ctx, r.opts.MinCatalogRefresh); err != nil {
			return eniplan.Resolved{}, err
		}
		res = eniplan.ResolveIn(c.Subnets, c.Groups, spec)
	}
	return eniplan.RequireIPv6(res, spec), nil
}
