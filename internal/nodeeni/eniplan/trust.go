package eniplan

import (
	"fmt"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
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
	// UntrustedCopied: its birth proof's nonce is bound to another ENI,
	// which this process created with it.
	UntrustedCopied = "CopiedNonce"
	// UntrustedSharedNonce: another ENI shows the same recorded nonce,
	// none of them bound yet: one is a copy, and which is not known.
	UntrustedSharedNonce = "SharedNonce"
	// UntrustedUnbound: its birth proof verifies but no ENINode records
	// its nonce or its ID: a copy of the tags of an ENI since deleted, or
	// an ENI whose record was lost.
	UntrustedUnbound = "UnboundNonce"
)

// UntrustedReasons lists every reason, for the metric's reset.
var UntrustedReasons = []string{UntrustedInterfaceType, UntrustedRequesterManaged, UntrustedTaggerTag, UntrustedCluster,
	UntrustedMissingTag, UntrustedDeviceIndexTag, UntrustedAttachedElsewhere, UntrustedNodeENIName, UntrustedUnproven, UntrustedBadProof,
	UntrustedCopied, UntrustedSharedNonce, UntrustedUnbound}

// TrustCheck decides which ENIs carrying the cluster's tag are the
// operator's own.
type TrustCheck struct {
	Cluster string
	Keys    *ownership.KeyRing
}

// verdict is the trust check's answer for one ENI: why it is not to be
// acted on ("" when it is the operator's own), the detail for logs and
// events, the key that signed a trusted ENI's proof, and whether its
// proof must be written again (restore): its ENINode vouches for it but
// its proof is missing or does not verify (a removed tag, a lost key).
type verdict struct {
	Reason, Detail, key string
	restore             bool
}

// Judge decides whether an ENI carrying the cluster's tag is the
// operator's own. The ownership tags are only evidence: anyone allowed to
// tag ENIs can copy them onto an interface the operator never made (a
// pod's, a branch ENI, an AWS service's). So an ENI is trusted only when
// it looks exactly like what CreateNetworkInterface made for a NodeENI (a
// plain "interface", not managed by an AWS service, without the pod
// tagger's bookkeeping, carrying every ownership tag for this cluster,
// attached if at all to the instance its tag names, and, when the caller
// knows the NodeENI its UID names, tagged with that NodeENI's name), and
// something only the operator can produce makes it this ENI's:
//   - its ENINode entry, or the record of its create bound to it, names
//     it where it is (they vouch even when its proof was removed or its
//     key lost; the proof is then restored);
//   - its birth proof verifies and its nonce is bound to it (births.go);
//   - its v1 proof, an HMAC over its ID (adoption, earlier versions),
//     verifies.
func (t TrustCheck) Judge(e awstypes.ENI, nodeENI string, ev Evidence) verdict {
	if reason, detail := DistrustShape(e, t.Cluster, nodeENI); reason != "" {
		return verdict{Reason: reason, Detail: detail}
	}
	entry := ev.vouched(e)
	proof, ok := e.Tags[TagProof]
	if !ok {
		if entry {
			return verdict{restore: true}
		}
		return verdict{Reason: UntrustedUnproven, Detail: fmt.Sprintf("carries no ownership proof (tag %s)", TagProof)}
	}
	var key string
	var err error
	if ownership.IsBirthProof(proof) {
		key, err = t.Keys.VerifyBirth(BirthClaim(e), proof)
	} else {
		key, err = t.Keys.Verify(ClaimOf(e), proof)
	}
	switch {
	case err != nil && entry:
		return verdict{restore: true}
	case err != nil:
		return verdict{Reason: UntrustedBadProof, Detail: fmt.Sprintf("its ownership proof (tag %s) %v", TagProof, err)}
	case entry || !ownership.IsBirthProof(proof):
		return verdict{key: key}
	}
	if reason, detail := ev.birthOf(e); reason != "" {
		return verdict{Reason: reason, Detail: detail}
	}
	return verdict{key: key}
}

func DistrustShape(e awstypes.ENI, cluster, nodeENI string) (reason, detail string) {
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

// Verdicts are the trust check's reasons and details by ENI ID, for the
// ENIs it refused, the key that signed each trusted ENI's proof, and the
// trusted ENIs whose proof is to be restored.
type Verdicts struct {
	Reasons, Details, SignedBy map[string]string
	Restore                    map[string]bool
}

// SplitTrusted keeps the items whose ENI passes the trust check, and says
// why of the others. nodeENIName gives the name of the NodeENI an ENI's
// UID tag names, "" when unknown; ev is the evidence of the ENINodes and
// this process's creates, its nonces counted over the list.
func SplitTrusted[T any](t TrustCheck, list []T, eniOf func(T) awstypes.ENI, nodeENIName func(awstypes.ENI) string, ev Evidence) ([]T, Verdicts) {
	enis := make([]awstypes.ENI, len(list))
	for i, item := range list {
		enis[i] = eniOf(item)
	}
	ev = ev.Showing(enis)
	out := make([]T, 0, len(list))
	v := Verdicts{Reasons: map[string]string{}, Details: map[string]string{}, SignedBy: map[string]string{}, Restore: map[string]bool{}}
	for i, item := range list {
		e := enis[i]
		j := t.Judge(e, nodeENIName(e), ev)
		if j.Reason != "" {
			v.Reasons[e.ID], v.Details[e.ID] = j.Reason, j.Detail
			continue
		}
		if j.restore {
			v.Restore[e.ID] = true
		} else {
			v.SignedBy[e.ID] = j.key
		}
		out = append(out, item)
	}
	return out, v
}

// LeftAlone says how ENIs the controller will not act on are reported.
type LeftAlone struct {
	Log, Reason, Action, Note string // note: a format of the count and the list
}
