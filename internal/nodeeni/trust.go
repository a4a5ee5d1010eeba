package nodeeni

import (
	"fmt"
	"sync"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/ownership"
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
	// UntrustedUnproven: every tag is right but the ENI carries no proof
	// (tag eni-operator.io/proof): a copy without it, an ENI of an earlier
	// version not yet signed, or one whose proof write was lost.
	UntrustedUnproven = "Unproven"
	// UntrustedBadProof: the proof is not this ENI's (a complete copy of
	// another ENI's tags), an ownership tag changed since it was signed,
	// or its key is no longer in the key ring.
	UntrustedBadProof = "BadProof"
)

// untrustedReasons lists every reason, for the metric's reset.
var untrustedReasons = []string{UntrustedInterfaceType, UntrustedRequesterManaged, UntrustedTaggerTag, UntrustedCluster,
	UntrustedMissingTag, UntrustedDeviceIndexTag, UntrustedAttachedElsewhere, UntrustedNodeENIName, UntrustedUnproven, UntrustedBadProof}

// trustCheck decides which ENIs carrying the cluster's tag are the
// operator's own.
type trustCheck struct {
	cluster string
	keys    *ownership.KeyRing
}

// distrust says why an ENI is not to be acted on, or "" when it is the
// operator's own. The ownership tags are only evidence: anyone allowed to
// tag ENIs can copy them onto an interface the operator never made (a
// pod's, a branch ENI, an AWS service's). So an ENI is trusted only when
// it looks exactly like what CreateNetworkInterface made for a NodeENI
// (a plain "interface", not managed by an AWS service, without the pod
// tagger's bookkeeping, carrying every ownership tag for this cluster,
// attached if at all to the instance its tag names, and, when the caller
// knows the NodeENI its UID names, tagged with that NodeENI's name) and
// its proof verifies: an HMAC over its ID and those tags under a key only
// the operator holds (internal/ownership). The detail names what was
// wrong, for logs and events.
func (t trustCheck) distrust(e ec2.ENI, nodeENI string) (reason, detail string) {
	reason, detail, _ = t.judge(e, nodeENI)
	return reason, detail
}

// judge is distrust that also names the key that signed a trusted ENI's
// proof.
func (t trustCheck) judge(e ec2.ENI, nodeENI string) (reason, detail, key string) {
	if reason, detail = distrustShape(e, t.cluster, nodeENI); reason != "" {
		return reason, detail, ""
	}
	return t.distrustProof(e)
}

func distrustShape(e ec2.ENI, cluster, nodeENI string) (reason, detail string) {
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

// distrustProof checks the ENI's proof of ownership and names the key
// that signed it.
func (t trustCheck) distrustProof(e ec2.ENI) (reason, detail, key string) {
	proof, ok := e.Tags[TagProof]
	if !ok {
		return UntrustedUnproven, fmt.Sprintf("carries no ownership proof (tag %s)", TagProof), ""
	}
	key, err := t.keys.Verify(claimOf(e), proof)
	if err != nil {
		return UntrustedBadProof, fmt.Sprintf("its ownership proof (tag %s) %v", TagProof, err), ""
	}
	return "", "", key
}

// verdicts are the trust check's reasons and details by ENI ID, for the
// ENIs it refused, and the key that signed each trusted ENI's proof.
type verdicts struct{ reasons, details, signedBy map[string]string }

// splitTrusted keeps the items whose ENI passes the trust check, and says
// why of the others. nodeENIName gives the name of the NodeENI an ENI's
// UID tag names, "" when unknown.
func splitTrusted[T any](t trustCheck, list []T, eniOf func(T) ec2.ENI, nodeENIName func(ec2.ENI) string) ([]T, verdicts) {
	out := make([]T, 0, len(list))
	v := verdicts{reasons: map[string]string{}, details: map[string]string{}, signedBy: map[string]string{}}
	for _, item := range list {
		e := eniOf(item)
		reason, detail, key := t.judge(e, nodeENIName(e))
		if reason != "" {
			v.reasons[e.ID], v.details[e.ID] = reason, detail
			continue
		}
		v.signedBy[e.ID] = key
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
