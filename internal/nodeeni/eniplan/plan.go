package eniplan

import (
	"cmp"
	"slices"
	"strings"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
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
	// ReasonAmbiguousName: a name of the spec matches more than one
	// subnet of a zone, or more than one security group (ambiguity.go).
	ReasonAmbiguousName = "AmbiguousName"
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

// Blocked is a node (and subnet) that cannot get its ENI now.
type Blocked struct {
	Node, Subnet, Reason, Message string
	// group: a NodeENI-wide problem of the security groups, not the subnets.
	group bool
}

// Transient reports whether the block clears by itself (an ENI of the
// same NodeENI is on its way out), so it is progress, not degradation.
func (b Blocked) Transient() bool { return b.Reason == ReasonWaitingForDetach }

type ActionKind int

const (
	ActCreate             ActionKind = iota // create, then attach at Index
	ActAttach                               // attach ENI at Index
	ActSetDOT                               // set DeleteOnTermination
	ActSetGroups                            // replace security groups
	ActSetDesc                              // change the description
	ActSetTags                              // set and remove user tags (tagrecord.go)
	ActDetach                               // detach (cleanup)
	ActPoll                                 // re-read a detaching ENI; delete it once available if unwanted
	ActDelete                               // delete an available ENI (cleanup)
	ActAdopt                                // tag an ENI of aws-multi-eni-controller as this operator's (adopt.go)
	ActProve                                // write an ENI's ownership proof (proofs.go)
	ActSetSourceDestCheck                   // set the source/destination check (settings.go)
	ActAssignIPs                            // assign the secondary IPv4 addresses an ENI lacks (settings.go)
)

var ActionNames = map[ActionKind]string{ActCreate: "create", ActAttach: "attach", ActSetDOT: "set-delete-on-termination",
	ActSetGroups: "set-security-groups", ActSetDesc: "set-description", ActSetTags: "set-tags", ActDetach: "detach",
	ActPoll: "poll", ActDelete: "delete", ActAdopt: "adopt", ActProve: "prove", ActSetSourceDestCheck: "set-source-dest-check",
	ActAssignIPs: "assign-private-ips"}

func (k ActionKind) String() string { return ActionNames[k] }

// Action is one step of a plan; steps of one node run in order.
type Action struct {
	Kind         ActionKind
	Node         string
	Want         Want   // create, attach
	ENI          string // all but create
	AttachmentID string // detach, set-delete-on-termination
	Index        int    // create, attach
	DOT          bool   // create, attach, set-delete-on-termination
	Check        bool   // set-source-dest-check
	Count        int    // assign-private-ips
	Groups       []string
	Description  string
	Tags         map[string]string
	// Remove (set-tags) are tags to remove where they hold these values;
	// Record is the ENI's record of applied tags once done (tagrecord.go).
	Remove, Record map[string]string
	// Reason is the cleanup reason of detach, poll and delete; poll with
	// no reason is a wanted ENI still detaching.
	Reason string
	// Nonce is a create's, recorded before it (births.go).
	Nonce string
}

// InstanceView is what the plan needs of an instance to attach to it.
type InstanceView struct {
	ID, Type, State, Zone string
	// MaxENIs is how many interfaces the spec's network card takes.
	MaxENIs int
	Limits  awstypes.InstanceLimits
	// Slots maps each device index in use on the spec's network card to
	// the ENI holding it: EC2 counts device indexes and interfaces per card.
	Slots map[int]string
}

// PlanInput is everything one NodeENI's plan depends on.
type PlanInput struct {
	// Base is spec.deviceIndex.
	Base int
	// Settings are the spec's ENI settings (settings.go).
	Settings            ENISettings
	DeleteOnTermination bool
	// SecurityGroups are the resolved groups, sorted; nil when they could
	// not all be resolved, which stops creates and group changes.
	SecurityGroups []string
	Description    string
	Tags           map[string]string
	// NodeTags are the tags of a node's interfaces where tag policies
	// select the node (Tags merged with theirs); Tags elsewhere.
	NodeTags map[string]map[string]string
	// Recorded are the user and policy tags the operator wrote, by ENI
	// (tagrecord.go). HoldTags (everywhere) and HoldTagsOn (on a node)
	// say the wanted tags are not known for sure (TagDrift).
	Recorded   map[string]map[string]string
	HoldTags   bool
	HoldTagsOn map[string]bool
	// Deleting means the NodeENI is being deleted: nothing is wanted.
	Deleting bool
	// SubnetsComplete is false when some subnet source could not be
	// resolved; ENIs in subnets not found are then kept, not removed.
	SubnetsComplete bool
	Wants           []Want
	// Nodes holds every node's name, to tell a deleted node from an
	// unmatched one; NodeInstances maps matching nodes to their instance.
	Nodes         map[string]bool
	NodeInstances map[string]string
	// ENIs are this NodeENI's ENIs, local changes applied.
	ENIs []Owned
	// Legacy is what the deprecated status.attachments still vouches for
	// (proofs.go).
	Legacy LegacyStatus
	// Records are the ENINodes' entries and pending creates of the
	// NodeENI: evidence of its ENIs (births.go).
	Records Records
	// Distrusted are the ENIs carrying its tags left alone, by ID: why.
	Distrusted map[string]string
	// Instances are the views fetched for NeedInstances of a previous pass.
	Instances map[string]InstanceView
	// Subnets are the subnets in force, for status.subnets: the resolved
	// ones, each pinned zone's replaced by its pin (selection.go).
	// Resolved are the resolved ones as such, to report the difference.
	Subnets, Resolved []SubnetInfo
	// SelectionHash digests the spec's subnet and group sources; Pins are
	// the selection records of the ENIs, by ID; ZoneSubnets the subnet
	// IDs in force per zone and SubnetZones every VPC subnet's zone.
	SelectionHash string
	Pins          map[string]v1alpha1.ENISelection
	ZoneSubnets   map[string][]string
	SubnetZones   map[string]string
	// MTU and CIDRs (by subnet ID) are copied into status for the agent.
	MTU   int32
	CIDRs map[string]string
	// Adopt are the adoptions of aws-multi-eni-controller's ENIs (adopt.go);
	// ENIs holds those ENIs as they will be once adopted, so the plan
	// treats them as the NodeENI's own.
	Adopt []Action
	// Prove are the proofs to write before anything else is done to those
	// ENIs (proofs.go): ENIs of earlier versions and of rotated keys.
	Prove []Action
}

// Plan is what one NodeENI needs done, and how it stands.
type Plan struct {
	Actions []Action
	Blocked []Blocked
	// NeedInstances lists instances to describe before the plan can
	// decide on attaching; the caller fetches them and plans again.
	NeedInstances []string
	Attachments   []v1alpha1.ENIAttachment
	ReadyNodes    int
	// held are the blocks of nodes whose superseded ENIs stay because
	// the new spec cannot be met there.
	held map[string][]Blocked
}

// attachedTo reports whether an ENI is attached (or attaching) to instance.
func attachedTo(o Owned, instance string) bool {
	a := o.Attachment
	return a != nil && a.InstanceID == instance && (a.Status == "attached" || a.Status == "attaching")
}

func detaching(o Owned) bool {
	return o.Attachment != nil && o.Attachment.Status == "detaching"
}

// planKey identifies a wanted ENI: a node, its instance and a subnet.
type planKey struct{ node, instance, subnet string }

func keyOf(w Want) planKey { return planKey{w.Node, w.Instance, w.Subnet} }

// leavingENI is an ENI the NodeENI no longer wants, with the cleanup
// reason ("" keeps it as it is: its subnet may only have failed to
// resolve).
type leavingENI struct {
	Owned
	reason string
}

// superseded reports whether an unwanted ENI only became unwanted through
// a spec change on a node that still wants ENIs of this NodeENI on the
// same instance, and is in place: it keeps working until its replacement
// is attached (make before break).
func (l leavingENI) superseded() bool {
	return (l.reason == CleanupDeviceIndexChanged || l.reason == CleanupSubnetRemoved || l.reason == CleanupSettingsChanged) &&
		attachedTo(l.Owned, l.Instance)
}

// classified is the first phase of a plan: for each want the ENI that
// serves it, if any, and the ENIs no want needs.
type classified struct {
	chosen   map[planKey]Owned
	unwanted []leavingENI
	// byNode groups the wants per node, nodes in rank order.
	nodes  []string
	byNode map[string][]Want
	// superseded lists each node's superseded ENIs.
	superseded map[string][]Owned
	// leavingOn maps an instance to the indexes of ENIs being removed
	// (superseded ENIs not included).
	leavingOn map[string]map[int]bool
}

// MakePlan decides what a NodeENI needs, in three phases: classify the
// NodeENI's ENIs (which serves which want, which are unwanted and why),
// decide what goes (removals, with superseded ENIs kept until their
// replacement is attached), and place the wants on their instances.
func MakePlan(in PlanInput) Plan { return PlanClassified(in, Classify(in)) }

// PlanClassified runs the phases after classify.
func PlanClassified(in PlanInput, c classified) Plan {
	var p Plan
	// Adoptions come first: a node's later steps (a removal of an adopted
	// ENI the spec no longer wants) run only once its tags are written.
	p.Actions = append(append(p.Actions, in.Prove...), in.Adopt...)
	keep := p.decideSuperseded(in, c)
	p.removals(in, c, keep)
	p.placement(in, c)
	slices.SortStableFunc(p.Attachments, func(a, b v1alpha1.ENIAttachment) int {
		return cmp.Or(strings.Compare(a.NodeID, b.NodeID), cmp.Compare(a.DeviceIndex, b.DeviceIndex), strings.Compare(a.ENIID, b.ENIID))
	})
	return p
}

// candScore ranks an ENI as a candidate for a want on instance: attached
// to the right instance, then available, then detaching; attached
// elsewhere is never chosen.
func candScore(o Owned, instance string) int {
	switch {
	case attachedTo(o, instance):
		return 0
	case o.Attachment == nil:
		return 1
	case detaching(o):
		return 2
	}
	return 3
}

// Classify picks, for each want, the best ENI serving it and lists the
// others as unwanted, with their cleanup reason.
func Classify(in PlanInput) classified {
	c := classified{chosen: map[planKey]Owned{}, byNode: map[string][]Want{}, superseded: map[string][]Owned{},
		leavingOn: map[string]map[int]bool{}}
	wantSubnets, wantKeys := map[string]bool{}, map[planKey]bool{}
	for _, w := range in.Wants {
		if _, ok := c.byNode[w.Node]; !ok {
			c.nodes = append(c.nodes, w.Node)
		}
		c.byNode[w.Node] = append(c.byNode[w.Node], w)
		wantSubnets[w.Subnet] = true
		wantKeys[keyOf(w)] = true
	}
	cands := map[planKey][]Owned{}
	var unwanted []Owned
	for _, o := range in.ENIs {
		k := planKey{o.Node, o.Instance, o.SubnetID}
		if !in.Deleting && wantKeys[k] && o.Base == in.Base && in.Settings.Matches(o) && candScore(o, o.Instance) < 3 {
			cands[k] = append(cands[k], o)
			continue
		}
		unwanted = append(unwanted, o)
	}
	for k, list := range cands {
		slices.SortStableFunc(list, func(a, b Owned) int {
			return cmp.Or(cmp.Compare(candScore(a, k.instance), candScore(b, k.instance)), strings.Compare(a.ID, b.ID))
		})
		c.chosen[k] = list[0]
		unwanted = append(unwanted, list[1:]...)
	}
	for _, o := range unwanted {
		l := leavingENI{Owned: o, reason: cleanupReason(in, o, wantSubnets)}
		c.unwanted = append(c.unwanted, l)
		switch a := o.Attachment; {
		case l.superseded():
			c.superseded[o.Node] = append(c.superseded[o.Node], o)
		case l.reason != "" && a != nil && a.NetworkCardIndex == in.Settings.Card:
			if c.leavingOn[a.InstanceID] == nil {
				c.leavingOn[a.InstanceID] = map[int]bool{}
			}
			c.leavingOn[a.InstanceID][a.DeviceIndex] = true
		}
	}
	return c
}

// removals emits the cleanup of unwanted ENIs; kept superseded ENIs stay
// attached, with a status message saying why.
func (p *Plan) removals(in PlanInput, c classified, keep map[string]string) {
	for _, l := range c.unwanted {
		o := l.Owned
		if msg, ok := keep[o.ID]; ok {
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentAttached, msg))
			continue
		}
		switch {
		case l.reason == "":
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentAttached, "subnet not resolved; kept as is"))
		case detaching(o):
			p.Actions = append(p.Actions, Action{Kind: ActPoll, Node: o.Node, ENI: o.ID, Reason: l.reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, l.reason))
		case o.Attachment != nil:
			p.Actions = append(p.Actions, Action{Kind: ActDetach, Node: o.Node, ENI: o.ID, AttachmentID: o.Attachment.ID, Reason: l.reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, l.reason))
		default:
			p.Actions = append(p.Actions, Action{Kind: ActDelete, Node: o.Node, ENI: o.ID, Reason: l.reason})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDeleting, l.reason))
		}
	}
}

const (
	stAttached placementState = iota // in place
	stReattach                       // detaching while unwanted, wanted again
	stNoGroups                       // nothing created while groups are unresolved
	stNeedInst                       // the instance must be described first
	stBlocked                        // cannot be placed now
	stPlace                          // attach (have) or create at idx
	stHeld                           // placeable, but its node keeps its superseded ENIs
)

// Drift returns the in-place changes that bring a kept ENI to the spec.
func Drift(in PlanInput, o Owned) []Action {
	var out []Action
	// Back to the groups the ENI was given, never to a resolution that a
	// tag written since changed (selection.go).
	if want := in.groupsOf(o); in.SecurityGroups != nil && len(want) > 0 {
		have := append([]string(nil), o.SecurityGroups...)
		slices.Sort(have)
		if !slices.Equal(have, want) {
			out = append(out, Action{Kind: ActSetGroups, Node: o.Node, ENI: o.ID, Groups: want})
		}
	}
	// An adopted ENI of aws-multi-eni-controller created without a
	// description carries that project's default, which an empty spec
	// description accepts: rewriting it would be a change nobody asked for.
	if o.Description != in.Description && (in.Description != "" || o.Description != OriginalDescription(o.Node)) {
		out = append(out, Action{Kind: ActSetDesc, Node: o.Node, ENI: o.ID, Description: in.Description})
	}
	out = append(out, TagDrift(in, o)...)
	return append(out, SettingsDrift(in.Settings, o)...)
}

// cleanupReason says why an ENI is not wanted, or "" when it must be kept
// because its subnet may only have failed to resolve.
func cleanupReason(in PlanInput, o Owned, wantSubnets map[string]bool) string {
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
	case !in.Settings.Matches(o):
		return CleanupSettingsChanged
	}
	return CleanupDuplicate
}

// entry is the status entry of one of the NodeENI's ENIs.
func (in PlanInput) entry(o Owned, status, msg string) v1alpha1.ENIAttachment {
	e := v1alpha1.ENIAttachment{NodeID: o.Node, InstanceID: o.Instance, ENIID: o.ID, SubnetID: o.SubnetID, SubnetCIDR: in.CIDRs[o.SubnetID],
		MACAddress: o.MAC, PrivateIP: o.PrimaryIP, DeviceIndex: int32(o.Index), Status: status, Message: msg, MTU: in.MTU,
		AppliedTags: HeldRecord(o.Tags, in.Recorded[o.ID]), Selection: in.SelectionOf(o)}
	if a := o.Attachment; a != nil {
		e.AttachmentID, e.DeviceIndex, e.DeleteOnTermination = a.ID, int32(a.DeviceIndex), a.DeleteOnTermination
	}
	if e.DeviceIndex < 0 {
		e.DeviceIndex = 0
	}
	return e
}
