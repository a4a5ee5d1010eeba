package tagger

import (
	"context"
	"net/netip"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// EC2 is what the tagger needs of EC2: the process's picture of its ENIs
// (with this process's own writes applied) and the calls that look an ENI
// up or change its tags. *ec2.State implements it; decisions can be
// tested against a fake.
type EC2 interface {
	ENI(id string) (awstypes.ENI, bool)
	ENIByIP(ip string) (awstypes.ENI, bool)
	LookupByIP(ctx context.Context, ip string) (awstypes.ENI, error)
	// Fresh re-reads a watched scope unless it was read within maxAge.
	Fresh(ctx context.Context, scope string, maxAge time.Duration) error
	// Synced reports whether a watched scope has been read once.
	Synced(scope string) bool
	CreateTags(ctx context.Context, id string, tags map[string]string) error
	DeleteTags(ctx context.Context, id string, tags map[string]string) error
}

// InventoryScope names the ENIs the tagger keeps fresh in the EC2 state
// (the VPC's, or those of --subnet-ids), re-read every
// --eni-inventory-interval to repair drift and find addresses inside
// delegated prefixes.
const InventoryScope = "tagger"

// dedicated reports whether ip is the ENI's own address (a branch ENI or
// an ENI made for one pod) rather than one of many pods' secondary
// addresses or prefixes on a node's ENI.
func dedicated(e awstypes.ENI, ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	if p, err := netip.ParseAddr(e.PrimaryIP); err == nil && p == a.Unmap() {
		return true
	}
	// An IPv6-only branch ENI: its single IPv6 address is the pod's.
	return e.InterfaceType == "branch" && len(e.IPv6Addresses) == 1 && e.IPv6Addresses[0] == a.String()
}

// nodeAddress reports whether ip is the primary address of an instance's
// primary ENI (attached at device index 0): the node's own address,
// which only a hostNetwork pod shares. Its ENI carries the node's
// traffic and is never a pod's to tag, whatever a pod's status claims.
func nodeAddress(e awstypes.ENI, ip string) bool {
	if e.Attachment == nil || e.Attachment.InstanceID == "" || e.Attachment.DeviceIndex != 0 {
		return false
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	p, err := netip.ParseAddr(e.PrimaryIP)
	return err == nil && p == a.Unmap()
}
