package nodeeni

import (
	"fmt"
	"slices"
	"sort"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// Reasons a node cannot get its ENI; they appear in the Degraded
// condition, in events and in the failed-ENIs metric.
const (
	ReasonNoSubnetInZone         = "NoSubnetInZone"
	ReasonNotOnEC2               = "NodeNotOnEC2"
	ReasonInstanceNotRunning     = "InstanceNotRunning"
	ReasonENILimitReached        = "ENILimitReached"
	ReasonDeviceIndexInUse       = "DeviceIndexInUse"
	ReasonDeviceIndexBeyondLimit = "DeviceIndexBeyondLimit"
	ReasonSubnetNotFound         = "SubnetNotFound"
	ReasonSecurityGroupNotFound  = "SecurityGroupNotFound"
	ReasonEC2Error               = "EC2Error"
	ReasonZoneMismatch           = "ZoneMismatch"
	// ReasonWaitingForDetach is transient: an ENI being removed still
	// holds the index or the slot.
	ReasonWaitingForDetach = "WaitingForDetach"
)

// Why an ENI is removed (the cleanup metric's reason label and events).
const (
	CleanupNodeENIDeleted     = "NodeENIDeleted"
	CleanupNodeDeleted        = "NodeDeleted"
	CleanupNodeUnmatched      = "NodeUnmatched"
	CleanupInstanceReplaced   = "InstanceReplaced"
	CleanupSubnetRemoved      = "SubnetRemoved"
	CleanupDeviceIndexChanged = "DeviceIndexChanged"
	CleanupDuplicate          = "Duplicate"
	CleanupOrphan             = "Orphan" // the collector's
)

// blocked is a node (and subnet) that cannot get its ENI now.
type blocked struct {
	Node, Subnet, Reason, Message string
}

// transient reports whether the block clears by itself (an ENI of the
// same NodeENI is on its way out), so it is progress, not degradation.
func (b blocked) transient() bool { return b.Reason == ReasonWaitingForDetach }

type actionKind int

const (
	actCreate    actionKind = iota // create, then attach at Index
	actAttach                      // attach ENI at Index
	actSetDOT                      // set DeleteOnTermination
	actSetGroups                   // replace security groups
	actSetDesc                     // change the description
	actSetTags                     // add or update user tags
	actDetach                      // detach (cleanup)
	actPoll                        // re-read a detaching ENI; delete it once available if unwanted
	actDelete                      // delete an available ENI (cleanup)
)

var actionNames = map[actionKind]string{actCreate: "create", actAttach: "attach", actSetDOT: "set-delete-on-termination",
	actSetGroups: "set-security-groups", actSetDesc: "set-description", actSetTags: "set-tags", actDetach: "detach",
	actPoll: "poll", actDelete: "delete"}

func (k actionKind) String() string { return actionNames[k] }

// action is one step of a plan; steps of one node run in order.
type action struct {
	Kind         actionKind
	Node         string
	Want         want   // create, attach
	ENI          string // all but create
	AttachmentID string // detach, set-delete-on-termination
	Index        int    // create, attach
	DOT          bool   // create, attach, set-delete-on-termination
	Groups       []string
	Description  string
	Tags         map[string]string
	// Reason is the cleanup reason of detach, poll and delete; poll with
	// no reason is a wanted ENI still detaching.
	Reason string
}

// instanceView is what the plan needs of an instance to attach to it.
type instanceView struct {
	ID, Type, State, Zone string
	MaxENIs               int
	// Slots maps each device index in use to the ENI holding it.
	Slots map[int]string
}

// planInput is everything one NodeENI's plan depends on.
type planInput struct {
	// Base is spec.deviceIndex.
	Base                int
	DeleteOnTermination bool
	// SecurityGroups are the resolved groups, sorted; nil when they could
	// not all be resolved, which stops creates and group changes.
	SecurityGroups []string
	Description    string
	Tags           map[string]string
	// Deleting means the NodeENI is being deleted: nothing is wanted.
	Deleting bool
	// SubnetsComplete is false when some subnet source could not be
	// resolved; ENIs in subnets not found are then kept, not removed.
	SubnetsComplete bool
	Wants           []want
	// Nodes holds every node's name, to tell a deleted node from an
	// unmatched one; NodeInstances maps matching nodes to their instance.
	Nodes         map[string]bool
	NodeInstances map[string]string
	// ENIs are this NodeENI's ENIs, local changes applied.
	ENIs []owned
	// Instances are the views fetched for NeedInstances of a previous pass.
	Instances map[string]instanceView
	// MTU and CIDRs (by subnet ID) are copied into status for the agent.
	MTU   int32
	CIDRs map[string]string
}

// plan is what one NodeENI needs done, and how it stands.
type plan struct {
	Actions []action
	Blocked []blocked
	// NeedInstances lists instances to describe before the plan can
	// decide on attaching; the caller fetches them and plans again.
	NeedInstances []string
	Attachments   []v1alpha1.ENIAttachment
	ReadyNodes    int
}

// attachedTo reports whether an ENI is attached (or attaching) to instance.
func attachedTo(o owned, instance string) bool {
	a := o.Attachment
	return a != nil && a.InstanceID == instance && (a.Status == "attached" || a.Status == "attaching")
}

func detaching(o owned) bool {
	return o.Attachment != nil && o.Attachment.Status == "detaching"
}

// makePlan decides what a NodeENI needs: which of its ENIs to keep, fix,
// attach or remove, what to create, and which nodes are blocked.
func makePlan(in planInput) plan {
	var p plan
	type key struct{ node, instance, subnet string }
	// Candidates per want, best first: attached to the right instance,
	// then available, then detaching.
	cands := map[key][]owned{}
	wantKeys := map[key]bool{}
	for _, w := range in.Wants {
		wantKeys[key{w.Node, w.Instance, w.Subnet}] = true
	}
	wantSubnets := map[string]bool{}
	for _, w := range in.Wants {
		wantSubnets[w.Subnet] = true
	}
	score := func(o owned, instance string) int {
		switch {
		case attachedTo(o, instance):
			return 0
		case o.Attachment == nil:
			return 1
		case detaching(o):
			return 2
		}
		return 3 // attached elsewhere: never chosen
	}
	var unwanted []owned
	for _, o := range in.ENIs {
		k := key{o.Node, o.Instance, o.SubnetID}
		if !in.Deleting && wantKeys[k] && o.Base == in.Base && score(o, o.Instance) < 3 {
			cands[k] = append(cands[k], o)
			continue
		}
		unwanted = append(unwanted, o)
	}
	chosen := map[key]owned{}
	for k, list := range cands {
		sort.SliceStable(list, func(i, j int) bool {
			si, sj := score(list[i], k.instance), score(list[j], k.instance)
			if si != sj {
				return si < sj
			}
			return list[i].ID < list[j].ID
		})
		chosen[k] = list[0]
		unwanted = append(unwanted, list[1:]...)
	}

	// Removals first: they free slots and indexes the wanted ENIs may need.
	leavingOn := map[string]map[int]bool{} // instance -> indexes held by leaving ENIs
	for _, o := range unwanted {
		reason := cleanupReason(in, o, wantSubnets)
		if reason == "" {
			// Its subnet could not be resolved this time: keep it as it is.
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentAttached, "subnet not resolved; kept as is"))
			continue
		}
		if a := o.Attachment; a != nil {
			if leavingOn[a.InstanceID] == nil {
				leavingOn[a.InstanceID] = map[int]bool{}
			}
			leavingOn[a.InstanceID][a.DeviceIndex] = true
		}
		switch {
		case detaching(o):
			p.Actions = append(p.Actions, action{Kind: actPoll, Node: o.Node, ENI: o.ID, Reason: reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, reason))
		case o.Attachment != nil:
			p.Actions = append(p.Actions, action{Kind: actDetach, Node: o.Node, ENI: o.ID, AttachmentID: o.Attachment.ID, Reason: reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, reason))
		default:
			p.Actions = append(p.Actions, action{Kind: actDelete, Node: o.Node, ENI: o.ID, Reason: reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDeleting, reason))
		}
	}

	// Wanted ENIs, node by node in rank order (in.Wants is sorted so).
	nodeReady := map[string]bool{}
	needed := map[string]bool{}
	used := map[string]map[int]bool{} // instance -> indexes chosen in this pass
	for _, w := range in.Wants {
		if _, seen := nodeReady[w.Node]; !seen {
			nodeReady[w.Node] = true
		}
		k := key{w.Node, w.Instance, w.Subnet}
		o, have := chosen[k]
		if have {
			p.Actions = append(p.Actions, drift(in, o)...)
		}
		switch {
		case have && attachedTo(o, w.Instance):
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentAttached, ""))
			if o.Attachment.DeleteOnTermination != in.DeleteOnTermination {
				p.Actions = append(p.Actions, action{Kind: actSetDOT, Node: w.Node, ENI: o.ID, AttachmentID: o.Attachment.ID, DOT: in.DeleteOnTermination})
			}
			continue
		case have && detaching(o):
			// Detached while unwanted, wanted again: attach once available.
			p.Actions = append(p.Actions, action{Kind: actPoll, Node: w.Node, ENI: o.ID})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, "wanted again; re-attached once detached"))
			nodeReady[w.Node] = false
			continue
		}
		nodeReady[w.Node] = false
		if !have && in.SecurityGroups == nil {
			// Creating with some groups missing would open the ENI wider
			// than the spec says; the Degraded condition names the group.
			continue
		}
		inst, ok := in.Instances[w.Instance]
		if !ok {
			if !needed[w.Instance] {
				needed[w.Instance] = true
				p.NeedInstances = append(p.NeedInstances, w.Instance)
			}
			if have {
				p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, ""))
			}
			continue
		}
		idx, b := placeOn(in, w, inst, o, have, leavingOn[w.Instance], used[w.Instance])
		if b != nil {
			p.Blocked = append(p.Blocked, *b)
			if have {
				p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, b.Message))
			}
			continue
		}
		if used[w.Instance] == nil {
			used[w.Instance] = map[int]bool{}
		}
		used[w.Instance][idx] = true
		if have {
			p.Actions = append(p.Actions, action{Kind: actAttach, Node: w.Node, Want: w, ENI: o.ID, Index: idx, DOT: in.DeleteOnTermination})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, ""))
		} else {
			p.Actions = append(p.Actions, action{Kind: actCreate, Node: w.Node, Want: w, Index: idx, DOT: in.DeleteOnTermination,
				Groups: in.SecurityGroups, Description: in.Description, Tags: in.Tags})
		}
	}
	for _, ready := range nodeReady {
		if ready {
			p.ReadyNodes++
		}
	}
	sort.SliceStable(p.Attachments, func(i, j int) bool {
		a, b := p.Attachments[i], p.Attachments[j]
		if a.NodeID != b.NodeID {
			return a.NodeID < b.NodeID
		}
		if a.DeviceIndex != b.DeviceIndex {
			return a.DeviceIndex < b.DeviceIndex
		}
		return a.ENIID < b.ENIID
	})
	return p
}

// placeOn picks the device index for a wanted ENI on its instance and
// checks the instance can take it.
func placeOn(in planInput, w want, inst instanceView, o owned, have bool, leavingIdx, usedNow map[int]bool) (int, *blocked) {
	block := func(reason, msg string) (int, *blocked) {
		return -1, &blocked{Node: w.Node, Subnet: w.Subnet, Reason: reason, Message: msg}
	}
	if inst.State != "running" && inst.State != "stopped" {
		return block(ReasonInstanceNotRunning, fmt.Sprintf("instance %s is %s", inst.ID, inst.State))
	}
	if inst.Zone != "" && inst.Zone != w.Zone {
		return block(ReasonZoneMismatch, fmt.Sprintf("the node's zone label says %s but instance %s is in %s; fix the node's %s label",
			w.Zone, inst.ID, inst.Zone, "topology.kubernetes.io/zone"))
	}
	taken := map[int]occupant{}
	inUse := 0
	for i, eni := range inst.Slots {
		inUse++
		switch {
		case leavingIdx[i]:
			taken[i] = leaving
		case in.isSibling(eni, w):
			taken[i] = sibling
		default:
			taken[i] = foreign
		}
	}
	for i := range usedNow {
		if taken[i] == free {
			inUse++
		}
		taken[i] = sibling
	}
	// A full instance is the more fundamental problem than a taken index.
	if inUse+1 > inst.MaxENIs {
		if len(leavingIdx) > 0 {
			return block(ReasonWaitingForDetach, fmt.Sprintf("instance %s (%s) is full until an ENI being removed is detached", inst.ID, inst.Type))
		}
		return block(ReasonENILimitReached, fmt.Sprintf("instance %s (%s) has all %d network interfaces in use; free one or use a larger instance type",
			inst.ID, inst.Type, inst.MaxENIs))
	}
	preferred := -1
	if have && o.Index >= 0 {
		preferred = o.Index
	}
	idx, reason, msg := chooseIndex(in.Base, w.Rank, preferred, taken)
	if reason == ReasonDeviceIndexInUse {
		msg += fmt.Sprintf(" (%s); free it or choose another deviceIndex", inst.Slots[idx])
	}
	if reason != "" {
		return block(reason, msg)
	}
	if idx >= inst.MaxENIs {
		return block(ReasonDeviceIndexBeyondLimit, fmt.Sprintf("device index %d is beyond instance type %s, which takes %d network interfaces (indexes 0-%d); use a lower deviceIndex or a larger instance type",
			idx, inst.Type, inst.MaxENIs, inst.MaxENIs-1))
	}
	return idx, nil
}

// isSibling reports whether eni is another wanted ENI of this NodeENI on
// w's node.
func (in planInput) isSibling(eni string, w want) bool {
	for _, o := range in.ENIs {
		if o.ID == eni {
			return o.Node == w.Node && o.SubnetID != w.Subnet
		}
	}
	return false
}

// drift returns the in-place changes that bring a kept ENI to the spec.
func drift(in planInput, o owned) []action {
	var out []action
	if in.SecurityGroups != nil {
		have := append([]string(nil), o.SecurityGroups...)
		sort.Strings(have)
		if !slices.Equal(have, in.SecurityGroups) {
			out = append(out, action{Kind: actSetGroups, Node: o.Node, ENI: o.ID, Groups: in.SecurityGroups})
		}
	}
	if o.Description != in.Description {
		out = append(out, action{Kind: actSetDesc, Node: o.Node, ENI: o.ID, Description: in.Description})
	}
	if set := userTagDiff(o.Tags, in.Tags); len(set) > 0 {
		out = append(out, action{Kind: actSetTags, Node: o.Node, ENI: o.ID, Tags: set})
	}
	return out
}

// cleanupReason says why an ENI is not wanted, or "" when it must be kept
// because its subnet may only have failed to resolve.
func cleanupReason(in planInput, o owned, wantSubnets map[string]bool) string {
	switch {
	case in.Deleting:
		return CleanupNodeENIDeleted
	case !in.Nodes[o.Node]:
		return CleanupNodeDeleted
	case in.NodeInstances[o.Node] == "":
		return CleanupNodeUnmatched
	case in.NodeInstances[o.Node] != o.Instance:
		return CleanupInstanceReplaced
	case !wantSubnets[o.SubnetID]:
		if !in.SubnetsComplete {
			return ""
		}
		return CleanupSubnetRemoved
	case o.Base != in.Base:
		return CleanupDeviceIndexChanged
	}
	return CleanupDuplicate
}

// entry is the status entry of one of the NodeENI's ENIs.
func (in planInput) entry(o owned, status, msg string) v1alpha1.ENIAttachment {
	e := v1alpha1.ENIAttachment{NodeID: o.Node, InstanceID: o.Instance, ENIID: o.ID, SubnetID: o.SubnetID, SubnetCIDR: in.CIDRs[o.SubnetID],
		MACAddress: o.MAC, PrivateIP: o.PrimaryIP, DeviceIndex: int32(o.Index), Status: status, Message: msg, MTU: in.MTU}
	if a := o.Attachment; a != nil {
		e.AttachmentID, e.DeviceIndex, e.DeleteOnTermination = a.ID, int32(a.DeviceIndex), a.DeleteOnTermination
	}
	if e.DeviceIndex < 0 {
		e.DeviceIndex = 0
	}
	return e
}
