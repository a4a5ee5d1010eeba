package nodeeni

import (
	"fmt"
	"sync"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// Reasons an ENI carrying the cluster's tag is not trusted as the
// operator's own (label of eni_operator_nodeeni_untrusted_enis, events).
const (
	UntrustedInterfaceType     = "InterfaceType"
	UntrustedRequesterManaged  = "RequesterManaged"
	UntrustedTaggerTag         = "TaggerTag"
	UntrustedCluster           = "ClusterMismatch"
	UntrustedMissingTag        = "MissingOwnershipTag"
	UntrustedDeviceIndexTag    = "BadDeviceIndexTag"
	UntrustedAttachedElsewhere = "AttachedElsewhere"
	UntrustedNodeENIName       = "NodeENINameMismatch"
)

// untrustedReasons lists every reason, for the metric's reset.
var untrustedReasons = []string{UntrustedInterfaceType, UntrustedRequesterManaged, UntrustedTaggerTag, UntrustedCluster,
	UntrustedMissingTag, UntrustedDeviceIndexTag, UntrustedAttachedElsewhere, UntrustedNodeENIName}

// distrust says why an ENI is not to be acted on, or "" when it is the
// operator's own. The ownership tags are only evidence: anyone allowed to
// tag ENIs can copy them onto an interface the operator never made (a
// pod's, a branch ENI, an AWS service's). So an ENI is trusted only when
// it looks exactly like what CreateNetworkInterface made for a NodeENI:
// a plain "interface" (EC2 and the emulator always report the type of an
// ENI they list, so an empty type is not trusted), not managed by an AWS
// service, without the pod tagger's bookkeeping, carrying every ownership
// tag for this cluster, attached (if at all) to the instance its tag
// names, and, when the caller knows the NodeENI its UID names (nodeENI
// non-empty), tagged with that NodeENI's name. The detail names what was
// wrong, for logs and events.
func distrust(e ec2.ENI, cluster, nodeENI string) (reason, detail string) {
	if e.InterfaceType != "interface" {
		return UntrustedInterfaceType, fmt.Sprintf("interface type %s, not \"interface\"", bounded.Quoted(e.InterfaceType))
	}
	if e.RequesterManaged {
		return UntrustedRequesterManaged, "managed by an AWS service (requesterManaged)"
	}
	// The tagger's hash tag (eni-tagger.io/hash) marks an ENI a pod uses.
	if k, ok := tagkeys.HasKeyWithPrefix(e.Tags, tagkeys.TaggerPrefix); ok {
		return UntrustedTaggerTag, fmt.Sprintf("carries the pod tagger's tag %s", bounded.Quoted(k))
	}
	if e.Tags[TagCluster] != cluster {
		return UntrustedCluster, fmt.Sprintf("tag %s is %s, not this cluster's", TagCluster, bounded.Quoted(e.Tags[TagCluster]))
	}
	for _, k := range []string{TagNodeENIUID, TagNodeENI, TagNode, TagInstance} {
		if e.Tags[k] == "" {
			return UntrustedMissingTag, fmt.Sprintf("tag %s is missing or empty", k)
		}
	}
	for _, k := range []string{TagDeviceIndex, TagDeviceIndexBase} {
		if intTag(e.Tags, k) < 0 {
			return UntrustedDeviceIndexTag, fmt.Sprintf("tag %s is %s, not a device index", k, bounded.Quoted(e.Tags[k]))
		}
	}
	if a := e.Attachment; a != nil && a.InstanceID != e.Tags[TagInstance] {
		return UntrustedAttachedElsewhere, fmt.Sprintf("attached to %s but tagged for instance %s", bounded.Quoted(a.InstanceID), bounded.Quoted(e.Tags[TagInstance]))
	}
	if nodeENI != "" && e.Tags[TagNodeENI] != nodeENI {
		return UntrustedNodeENIName, fmt.Sprintf("tagged for NodeENI %s but its UID is NodeENI %s's", bounded.Quoted(e.Tags[TagNodeENI]), bounded.Quoted(nodeENI))
	}
	return "", ""
}

// verdicts are the trust check's reasons and details by ENI ID, for the
// ENIs it refused.
type verdicts struct{ reasons, details map[string]string }

// splitTrusted keeps the items whose ENI passes the trust check, and says
// why of the others. nodeENIName gives the name of the NodeENI an ENI's
// UID tag names, "" when unknown.
func splitTrusted[T any](list []T, eniOf func(T) ec2.ENI, cluster string, nodeENIName func(ec2.ENI) string) ([]T, verdicts) {
	out := make([]T, 0, len(list))
	v := verdicts{reasons: map[string]string{}, details: map[string]string{}}
	for _, item := range list {
		e := eniOf(item)
		if reason, detail := distrust(e, cluster, nodeENIName(e)); reason != "" {
			v.reasons[e.ID], v.details[e.ID] = reason, detail
			continue
		}
		out = append(out, item)
	}
	return out, v
}

// distrustLog remembers, per scope (the inventory, a NodeENI, the
// collector), why each untrusted ENI was distrusted, so each is reported
// once per reason change rather than on every pass.
type distrustLog struct {
	mu     sync.Mutex
	scopes map[string]map[string]string
}

func newDistrustLog() *distrustLog { return &distrustLog{scopes: map[string]map[string]string{}} }

// update replaces a scope's untrusted ENIs (ID -> reason) and returns the
// IDs whose reason is new or changed since the last update.
func (d *distrustLog) update(scope string, now map[string]string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.scopes[scope]
	var changed []string
	for id, reason := range now {
		if old[id] != reason {
			changed = append(changed, id)
		}
	}
	if len(now) == 0 {
		delete(d.scopes, scope)
	} else {
		d.scopes[scope] = now
	}
	return changed
}
