package podaddrs

import (
	"context"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
)

// EC2 is what registration needs of EC2: the process's picture of the
// ENIs, the VPC's subnets, instance limits and the two address calls.
// *ec2.State implements it.
type EC2 interface {
	ENI(id string) (awstypes.ENI, bool)
	ENIByIP(ip string) (awstypes.ENI, bool)
	// HolderOf asks EC2 which ENI holds an address now (a not-found
	// error: none).
	HolderOf(ctx context.Context, ip string) (awstypes.ENI, error)
	Catalog(ctx context.Context, maxAge time.Duration) (ec2.Catalog, error)
	GetInstance(ctx context.Context, id string) (ec2.Instance, error)
	InstanceLimits(ctx context.Context, instanceType string) (awstypes.InstanceLimits, error)
	AssignAddresses(ctx context.Context, id string, a ec2.Addresses) error
	UnassignAddresses(ctx context.Context, id string, a ec2.Addresses) error
	// Synced reports whether a refresh covering the scope has completed.
	Synced(scope string) bool
}

// The rights registration uses (the operator's role has them for the
// NodeENI controller and the tagger too).
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=eninodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.aws,resources=nodeenis/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
