package nodeeni

import (
	"context"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// EC2 is what the NodeENI controller and the collector need of EC2: the
// process's picture of the cluster's ENIs (with this process's own
// changes applied), the VPC's catalog and instance-type limits, and the
// calls that change an ENI. *ec2.State implements it; decisions can be
// tested against a fake.
type EC2 interface {
	Synced(scope string) bool
	ENI(id string) (awstypes.ENI, bool)
	ENIsTagged(key, value string) []awstypes.ENI
	ENIsIn(scope string) ([]awstypes.ENI, time.Time)
	// Forget records that an ENI no longer exists.
	Forget(id string)
	Catalog(ctx context.Context, maxAge time.Duration) (ec2.Catalog, error)
	InstanceLimits(ctx context.Context, instanceType string) (awstypes.InstanceLimits, error)
	Health() *ec2.Health

	GetENI(ctx context.Context, id string) (awstypes.ENI, error)
	ListENIs(ctx context.Context, filters ...ec2.Filter) ([]awstypes.ENI, error)
	GetInstance(ctx context.Context, id string) (ec2.Instance, error)
	CreateENI(ctx context.Context, in awstypes.CreateENIInput) (awstypes.ENI, error)
	AttachENI(ctx context.Context, id, instanceID string, deviceIndex, networkCard int) (string, error)
	SetDeleteOnTermination(ctx context.Context, id, attachmentID string, value bool) error
	SetSecurityGroups(ctx context.Context, id string, groups []string) error
	SetDescription(ctx context.Context, id, description string) error
	SetSourceDestCheck(ctx context.Context, id string, value bool) error
	AssignPrivateIPs(ctx context.Context, id string, count int) error
	CreateTags(ctx context.Context, id string, tags map[string]string) error
	// CreateTagsAlone writes tags no other ENI shares (a proof) at once.
	CreateTagsAlone(ctx context.Context, id string, tags map[string]string) error
	// DeleteTags removes tags only where they still hold the values given.
	DeleteTags(ctx context.Context, id string, tags map[string]string) error
	DetachENI(ctx context.Context, id, attachmentID string, force bool) error
	DeleteENI(ctx context.Context, id string) error
}

// InventoryScope names the ENIs the NodeENI controller keeps fresh in the
// EC2 state: those tagged with the operator's cluster, re-read every
// --nodeeni-resync-interval.
const InventoryScope = "nodeeni"

// ofNodeENI returns the ENIs tagged with a NodeENI's UID.
func ofNodeENI(c EC2, uid string) []eniplan.Owned {
	enis := c.ENIsTagged(eniplan.TagNodeENIUID, uid)
	out := make([]eniplan.Owned, 0, len(enis))
	for _, e := range enis {
		out = append(out, eniplan.OwnedFrom(e))
	}
	return out
}
