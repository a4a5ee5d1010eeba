package eniplan

import (
	"strconv"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ownership"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// Ownership tags, set on every ENI at creation (TagSpecifications). The
// cluster tag marks an ENI as the operator's: only ENIs carrying it with
// the operator's cluster name are ever read, changed or deleted.
const (
	TagCluster    = "eni-operator.io/cluster"
	TagNodeENI    = "eni-operator.io/nodeeni"
	TagNodeENIUID = "eni-operator.io/nodeeni-uid"
	TagNode       = "eni-operator.io/node"
	TagInstance   = "eni-operator.io/instance"
	TagCreatedAt  = "eni-operator.io/created-at"
	// TagDeviceIndex is the index the ENI was created for, so an ENI
	// created just before a crash is attached where it was meant to be.
	TagDeviceIndex = "eni-operator.io/device-index"
	// TagDeviceIndexBase is the NodeENI's deviceIndex at creation: when the
	// spec's changes, the ENI is replaced.
	TagDeviceIndexBase = "eni-operator.io/device-index-base"
	// TagProof carries the proof that the operator created or adopted
	// the ENI (internal/ownership): a birth proof over TagNonce, the
	// subnet and the tags above, written with the create; or, written at
	// adoption and when re-signing, an HMAC over the ENI's ID and the tags.
	TagProof = "eni-operator.io/proof"
	// TagNonce is the nonce a birth proof binds, recorded in the node's
	// ENINode (spec.creates) before the create (births.go).
	TagNonce = "eni-operator.io/nonce"
	// TagNoManage tells the VPC CNI to leave the ENI alone.
	TagNoManage = "node.k8s.amazonaws.com/no_manage"
)

// reservedTag reports whether a tag key is on the product's reserved list
// (internal/tagkeys), so spec.tags never overwrite the operator's
// ownership tags or set one another component acts on. The CRD refuses
// such keys already; this holds even if that validation is bypassed.
func reservedTag(k string) bool { return tagkeys.IsReserved(k) }

// Owned is an operator-owned ENI with its ownership tags decoded.
type Owned struct {
	awstypes.ENI
	UID, NodeENI, Node, Instance string
	// Index and Base are -1 when the tags are missing or malformed.
	Index, Base int
	CreatedAt   time.Time // zero when unknown
}

func OwnedFrom(e awstypes.ENI) Owned {
	o := Owned{ENI: e, UID: e.Tags[TagNodeENIUID], NodeENI: e.Tags[TagNodeENI], Node: e.Tags[TagNode],
		Instance: e.Tags[TagInstance], Index: intTag(e.Tags, TagDeviceIndex), Base: intTag(e.Tags, TagDeviceIndexBase)}
	if t, err := time.Parse(time.RFC3339, e.Tags[TagCreatedAt]); err == nil {
		o.CreatedAt = t
	}
	return o
}

// ClaimOf is what an ENI's proof binds: its ID and its ownership tags
// as they are.
func ClaimOf(e awstypes.ENI) ownership.Claim {
	t := e.Tags
	return ownership.Claim{ENI: e.ID, Cluster: t[TagCluster], NodeENI: t[TagNodeENI], NodeENIUID: t[TagNodeENIUID],
		Node: t[TagNode], Instance: t[TagInstance], DeviceIndex: t[TagDeviceIndex], DeviceIndexBase: t[TagDeviceIndexBase],
		CreatedAt: t[TagCreatedAt]}
}

func intTag(tags map[string]string, k string) int {
	v, err := strconv.Atoi(tags[k])
	if err != nil {
		return -1
	}
	return v
}

// OwnedBy is whose an ENI the operator creates or adopts is, as its
// ownership tags say.
type OwnedBy struct {
	Cluster      string
	NodeENI, UID string    // the NodeENI's name and UID
	Base         int       // the NodeENI's device index base (spec.deviceIndex)
	Created      time.Time // when the ENI was first asked for
}

// OwnershipTags are the tags of a new ENI for w at device index index:
// the user's, reserved keys left out, then the operator's.
func OwnershipTags(by OwnedBy, w Want, index int, user map[string]string) map[string]string {
	tags := make(map[string]string, len(user)+9)
	for k, v := range user {
		if userTag(k, v) {
			tags[k] = v
		}
	}
	tags[TagCluster] = by.Cluster
	tags[TagNodeENI] = by.NodeENI
	tags[TagNodeENIUID] = by.UID
	tags[TagNode] = w.Node
	tags[TagInstance] = w.Instance
	tags[TagCreatedAt] = by.Created.UTC().Format(time.RFC3339)
	tags[TagDeviceIndex] = strconv.Itoa(index)
	tags[TagDeviceIndexBase] = strconv.Itoa(by.Base)
	tags[TagNoManage] = "true"
	return tags
}

// userTagDiff returns the spec's tags an ENI lacks or carries with
// another value. Removal is TagChanges's (tagrecord.go): only a tag the
// operator recorded writing goes, as a tag missing from the spec may be
// someone else's (cost allocation, backup tooling).
func userTagDiff(have, want map[string]string) map[string]string {
	var set map[string]string
	for k, v := range want {
		if !userTag(k, v) {
			continue
		}
		if cur, ok := have[k]; !ok || cur != v {
			if set == nil {
				set = map[string]string{}
			}
			set[k] = v
		}
	}
	return set
}

// ProofTag returns the tag proving that e, with its tags as given (as
// they will be once written), is the operator's, signed with the ring's
// current key.
func ProofTag(keys *ownership.KeyRing, e awstypes.ENI) map[string]string {
	return map[string]string{TagProof: keys.Sign(ClaimOf(e))}
}
