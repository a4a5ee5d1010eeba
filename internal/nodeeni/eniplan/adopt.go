package eniplan

import (
	"fmt"
	"maps"
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// The tags aws-multi-eni-controller (the project this operator replaces)
// puts on every ENI it creates. Its ENIs carry none of this operator's
// ownership tags, so they are found by these and adopted in place
// (originals.go).
const (
	OriginalTagNodeENI   = "NodeENI"
	OriginalTagNode      = "Node"
	OriginalTagSubnet    = "SubnetID"
	OriginalTagManagedBy = "kubernetes.io/cluster/managed-by"
	OriginalManagedBy    = "nodeeni-controller"
)

// OriginalDescription is the description aws-multi-eni-controller gives
// an ENI when the NodeENI sets none. Only ec2:CreateNetworkInterface or
// ec2:ModifyNetworkInterfaceAttribute can set a description, not
// ec2:CreateTags, so it is evidence a tag-writer cannot forge.
func OriginalDescription(node string) string {
	return "ENI created by nodeeni-controller for node " + node
}

// Reasons one of the original's ENIs (or an ENI its status names) is not
// adopted; they appear in the NotAdopted event and the log.
const (
	NotAdoptedInterfaceType     = "InterfaceType"
	NotAdoptedRequesterManaged  = "RequesterManaged"
	NotAdoptedOtherVPC          = "OtherVPC"
	NotAdoptedReservedTag       = "ReservedTag"
	NotAdoptedOriginalTags      = "OriginalTagsMismatch"
	NotAdoptedUnknownNode       = "UnknownNode"
	NotAdoptedNotAttached       = "NotAttached"
	NotAdoptedAttachedElsewhere = "AttachedElsewhere"
	NotAdoptedPrimary           = "PrimaryInterface"
	NotAdoptedRecordMismatch    = "RecordMismatch"
	NotAdoptedNoSecondEvidence  = "NoSecondEvidence"
	NotAdoptedNotFound          = "NotFoundInVPC"
)

// AdoptionEvidence is what the adoption decision weighs an ENI against,
// all of it read from sources the ENI's tags cannot change.
type AdoptionEvidence struct {
	// NodeENI is the NodeENI's name.
	NodeENI string
	// Subnets maps the cluster VPC's subnets (the catalog) to their VPC.
	Subnets map[string]string
	// Nodes maps every node of the cluster to its instance ("" when its
	// provider ID names none).
	Nodes map[string]string
	// Records are the NodeENI's status.attachments entries by ENI, as the
	// original (or this operator, later) wrote them.
	Records map[string]v1alpha1.ENIAttachment
	// Description is the spec's description.
	Description string
}

// NotAdoptable says why an ENI carrying aws-multi-eni-controller's tags is
// not adopted by this NodeENI, or "" when it is. Adoption makes the ENI
// this operator's — later detached and deleted like its own — so the
// original's tags alone (anyone allowed ec2:CreateTags can copy them) are
// never enough, nor is a status entry alone (anyone allowed to write the
// NodeENI's status can name any ENI). An ENI is adopted only when:
//   - it looks like what the original creates: a plain "interface", not
//     managed by an AWS service, in the cluster's VPC, carrying no
//     reserved tag but the original's own (no other owner: this
//     operator, the tagger, the VPC CNI, EKS, Karpenter, ...);
//   - its tags are the original's for this NodeENI, with its own subnet;
//   - it is attached (not attaching or detaching) to the instance of the
//     node its tag names, a node of this cluster, at a secondary index:
//     an ENI attached elsewhere, or detached, is never taken over (a
//     detached ENI may be someone's spare, a failover ENI for one);
//   - a second, independent piece of evidence agrees: the NodeENI's
//     status names it on that node and instance in that subnet, or, with
//     no status entry, its description is the original's default for
//     that node or the spec's (which ec2:CreateTags cannot set).
//
// The detail names what was wrong, for the event and the log.
func NotAdoptable(e awstypes.ENI, ev AdoptionEvidence) (reason, detail string) {
	if reason, detail = adoptShape(e, ev); reason != "" {
		return reason, detail
	}
	if reason, detail = adoptTags(e, ev); reason != "" {
		return reason, detail
	}
	return adoptPlace(e, ev)
}

// adoptShape checks that an ENI looks like one the original creates.
func adoptShape(e awstypes.ENI, ev AdoptionEvidence) (string, string) {
	if e.InterfaceType != "interface" {
		return NotAdoptedInterfaceType, fmt.Sprintf("interface type %s, not \"interface\"", bounded.Quoted(e.InterfaceType))
	}
	if e.RequesterManaged {
		return NotAdoptedRequesterManaged, "managed by an AWS service (requesterManaged)"
	}
	if vpc, ok := ev.Subnets[e.SubnetID]; !ok || e.VPCID != vpc {
		return NotAdoptedOtherVPC, fmt.Sprintf("subnet %s (VPC %s) is not one of the cluster VPC's", bounded.Quoted(e.SubnetID), bounded.Quoted(e.VPCID))
	}
	// Sorted, so the detail is the same on every pass.
	for _, k := range slices.Sorted(maps.Keys(e.Tags)) {
		if tagkeys.IsReserved(k) && k != OriginalTagManagedBy && k != TagNoManage {
			return NotAdoptedReservedTag, fmt.Sprintf("carries the reserved tag %s, so another component owns it", bounded.Quoted(k))
		}
	}
	return "", ""
}

// adoptTags checks the original's tags name this NodeENI and the ENI's
// own subnet.
func adoptTags(e awstypes.ENI, ev AdoptionEvidence) (string, string) {
	switch t := e.Tags; {
	case t[OriginalTagManagedBy] != OriginalManagedBy:
		return NotAdoptedOriginalTags, fmt.Sprintf("tag %s is %s, not %q", OriginalTagManagedBy, bounded.Quoted(t[OriginalTagManagedBy]), OriginalManagedBy)
	case t[OriginalTagNodeENI] != ev.NodeENI:
		return NotAdoptedOriginalTags, fmt.Sprintf("tag %s is %s, not this NodeENI's name", OriginalTagNodeENI, bounded.Quoted(t[OriginalTagNodeENI]))
	case t[OriginalTagNode] == "":
		return NotAdoptedOriginalTags, fmt.Sprintf("tag %s is missing or empty", OriginalTagNode)
	case t[OriginalTagSubnet] != e.SubnetID:
		return NotAdoptedOriginalTags, fmt.Sprintf("tag %s is %s, but the ENI is in subnet %s", OriginalTagSubnet, bounded.Quoted(t[OriginalTagSubnet]), e.SubnetID)
	}
	return "", ""
}

// adoptPlace checks the ENI is attached to its node's instance and that a
// second piece of evidence agrees.
func adoptPlace(e awstypes.ENI, ev AdoptionEvidence) (string, string) {
	node := e.Tags[OriginalTagNode]
	inst, known := ev.Nodes[node]
	if !known || inst == "" {
		return NotAdoptedUnknownNode, fmt.Sprintf("tagged for node %s, which is not a node of this cluster on EC2", bounded.Quoted(node))
	}
	a := e.Attachment
	switch {
	case a == nil || a.Status != "attached":
		return NotAdoptedNotAttached, "not attached; a detached ENI is never adopted (delete it, or attach it back to its node)"
	case a.InstanceID != inst:
		return NotAdoptedAttachedElsewhere, fmt.Sprintf("attached to %s, not to node %s's instance %s", bounded.Quoted(a.InstanceID), bounded.Quoted(node), inst)
	case a.DeviceIndex < 1:
		return NotAdoptedPrimary, "attached at device index 0, the instance's primary interface"
	}
	if rec, ok := ev.Records[e.ID]; ok {
		if rec.NodeID != node || rec.InstanceID != inst || (rec.SubnetID != "" && rec.SubnetID != e.SubnetID) {
			return NotAdoptedRecordMismatch, fmt.Sprintf("the NodeENI's status names it on node %s, instance %s, subnet %s",
				bounded.Quoted(rec.NodeID), bounded.Quoted(rec.InstanceID), bounded.Quoted(rec.SubnetID))
		}
		return "", ""
	}
	if e.Description == OriginalDescription(node) || (ev.Description != "" && e.Description == ev.Description) {
		return "", ""
	}
	return NotAdoptedNoSecondEvidence, "the NodeENI's status does not name it and its description is neither the spec's nor the original's default"
}

// Adoption turns an ENI that passed NotAdoptable into the action that
// adopts it and the ENI as it is once adopted. The action is one
// CreateTags of the full ownership tag set (plus the spec's tags it
// lacks, so no second write follows): until it succeeds the ENI is as the
// original left it and is adopted again; after it, the ENI passes the
// trust check as this operator's own. The attachment and its device index
// are kept: the index tag is the one it is attached at.
func Adoption(e awstypes.ENI, by OwnedBy, user map[string]string) (Action, Owned) {
	a := e.Attachment
	w := Want{Node: e.Tags[OriginalTagNode], Instance: a.InstanceID}
	tags := OwnershipTags(by, w, a.DeviceIndex, userTagDiff(e.Tags, user))
	after := e
	after.Tags = maps.Clone(e.Tags)
	maps.Copy(after.Tags, tags)
	return Action{Kind: ActAdopt, Node: w.Node, ENI: e.ID, Index: a.DeviceIndex, Tags: tags}, OwnedFrom(after)
}

// NeedsOriginals reports whether a NodeENI that already had the shared
// finalizer may still have ENIs of the original to adopt: this operator
// never wrote its status (it was the original's), or its status names an
// ENI that is not one of this operator's (the original's entry of an
// adoption EC2 refused, an ENI shown as to be adopted in dry-run, or one
// that went away since, which costs one listing before the status drops
// it). Otherwise the original's ENIs are not listed, so the steady state
// costs no EC2 call.
func NeedsOriginals(st v1alpha1.NodeENIStatus, ours []Owned) bool {
	if st.ObservedGeneration == 0 {
		return true
	}
	for _, a := range st.Attachments {
		if !slices.ContainsFunc(ours, func(o Owned) bool { return o.ID == a.ENIID }) {
			return true
		}
	}
	return false
}
