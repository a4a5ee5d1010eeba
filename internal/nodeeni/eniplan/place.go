package eniplan

import (
	"fmt"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// placement is what was decided for one want on its node.
type placement struct {
	w     Want
	o     Owned
	have  bool
	state placementState
	idx   int
	block *Blocked
}

type placementState int

// placeNode decides each want of one node on its instance; leavingIdx
// are the indexes held by ENIs on their way out.
func placeNode(in PlanInput, c classified, wants []Want, inst InstanceView, leavingIdx map[int]bool) []placement {
	var out []placement
	used := map[int]bool{}
	for _, w := range wants {
		o, have := c.chosen[keyOf(w)]
		r := placement{w: w, o: o, have: have}
		switch {
		case have && attachedTo(o, w.Instance):
			r.state = stAttached
		case have && detaching(o):
			r.state = stReattach
		case !have && in.SecurityGroups == nil:
			// Creating with some groups missing would open the ENI wider
			// than the spec says; the Degraded condition names the group.
			r.state = stNoGroups
		case inst.ID == "":
			r.state = stNeedInst
		default:
			r.idx, r.block = placeOn(in, r, inst, leavingIdx, used)
			r.state = stPlace
			if r.block != nil {
				r.state = stBlocked
			} else {
				used[r.idx] = true
			}
		}
		out = append(out, r)
	}
	return out
}

// blocksOf returns the blocks of some outcomes (nil when every want is
// attached, placeable or on its way back).
func blocksOf(out []placement) []Blocked {
	var bs []Blocked
	for _, r := range out {
		if r.state == stBlocked {
			bs = append(bs, *r.block)
		}
	}
	return bs
}

// InstancesToPlace lists the instances placement must know before it can
// place (placeNode's stNeedInst): those of nodes with a want that is
// neither attached, nor on its way back, nor waiting for its groups. The
// controller describes them, batched, before it plans, so the plan is
// made once.
func InstancesToPlace(in PlanInput, c classified) []string {
	var out []string
	for _, node := range c.nodes {
		for _, w := range c.byNode[node] {
			o, have := c.chosen[keyOf(w)]
			if (have && (attachedTo(o, w.Instance) || detaching(o))) || (!have && in.SecurityGroups == nil) {
				continue
			}
			if _, known := in.Instances[w.Instance]; !known {
				out = append(out, w.Instance)
			}
			break
		}
	}
	return out
}

// placement places each node's wants and emits the creates, attaches and
// in-place fixes, the blocks and the status entries.
func (p *Plan) placement(in PlanInput, c classified) {
	needed := map[string]bool{}
	for _, node := range c.nodes {
		wants := c.byNode[node]
		instID := wants[0].Instance
		inst := in.Instances[instID]
		leavingIdx := unionIdx(c.leavingOn[instID], c.superseded[node], in.Settings.Card)
		ready := true
		for _, r := range placeNode(in, c, wants, inst, leavingIdx) {
			if r.have {
				p.Actions = append(p.Actions, Drift(in, r.o)...)
			}
			if r.state != stAttached {
				ready = false
			}
			if held := p.held[node]; held != nil && (r.state == stBlocked || r.state == stPlace) {
				// The superseded ENIs stay: the new spec's reason is
				// reported, not a wait, and nothing is created for a node
				// that cannot take its whole spec.
				r = heldOutcome(r, held)
			}
			p.emit(in, r, needed)
		}
		if ready {
			p.ReadyNodes++
		}
	}
}

// heldOutcome is a want's outcome on a node whose superseded ENIs stay:
// blocked with the reason the new spec cannot be met, or merely waiting
// (stHeld) when this want could be placed but another cannot.
func heldOutcome(r placement, held []Blocked) placement {
	r.state, r.block = stHeld, nil
	for i := range held {
		if held[i].Subnet == r.w.Subnet {
			r.state, r.block = stBlocked, &held[i]
		}
	}
	return r
}

// emit turns one want's outcome into actions, a block and a status entry.
func (p *Plan) emit(in PlanInput, r placement, needed map[string]bool) {
	w, o := r.w, r.o
	switch r.state {
	case stAttached:
		p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentAttached, ""))
		if o.Attachment.DeleteOnTermination != in.DeleteOnTermination {
			p.Actions = append(p.Actions, Action{Kind: ActSetDOT, Node: w.Node, ENI: o.ID, AttachmentID: o.Attachment.ID, DOT: in.DeleteOnTermination})
		}
	case stReattach:
		// Detached while unwanted, wanted again: attach once available.
		p.Actions = append(p.Actions, Action{Kind: ActPoll, Node: w.Node, ENI: o.ID})
		p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentDetaching, "wanted again; re-attached once detached"))
	case stNoGroups:
	case stHeld:
		if r.have {
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, "not attached: the node keeps its previous ENIs until the whole spec can be met"))
		}
	case stNeedInst:
		if !needed[w.Instance] {
			needed[w.Instance] = true
			p.NeedInstances = append(p.NeedInstances, w.Instance)
		}
		if r.have {
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, ""))
		}
	case stBlocked:
		p.Blocked = append(p.Blocked, *r.block)
		if r.have {
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, r.block.Message))
		}
	case stPlace:
		if r.have {
			p.Actions = append(p.Actions, Action{Kind: ActAttach, Node: w.Node, Want: w, ENI: o.ID, Index: r.idx, DOT: in.DeleteOnTermination})
			p.Attachments = append(p.Attachments, in.entry(o, v1alpha1.AttachmentCreated, ""))
		} else {
			p.Actions = append(p.Actions, Action{Kind: ActCreate, Node: w.Node, Want: w, Index: r.idx, DOT: in.DeleteOnTermination,
				Groups: in.SecurityGroups, Description: in.Description, Tags: in.tagsFor(w.Node)})
		}
	}
}

// placeOn picks the device index for a wanted ENI (r's want, and its ENI
// when it has one) on its instance and checks the instance can take it.
// leavingIdx are the indexes held by ENIs on their way out, usedNow
// those given to the node's other wants in this pass.
func placeOn(in PlanInput, r placement, inst InstanceView, leavingIdx, usedNow map[int]bool) (int, *Blocked) {
	w := r.w
	block := func(reason, msg string) (int, *Blocked) {
		return -1, &Blocked{Node: w.Node, Subnet: w.Subnet, Reason: reason, Message: msg}
	}
	if inst.State != "running" && inst.State != "stopped" {
		return block(ReasonInstanceNotRunning, fmt.Sprintf("instance %s is %s", inst.ID, inst.State))
	}
	if inst.Zone != "" && inst.Zone != w.Zone {
		return block(ReasonZoneMismatch, fmt.Sprintf("the node's zone label says %s but instance %s is in %s; fix the node's %s label",
			w.Zone, inst.ID, inst.Zone, "topology.kubernetes.io/zone"))
	}
	if reason, msg := settingsBlock(in.Settings, inst, !r.have); reason != "" {
		return block(reason, fmt.Sprintf("instance %s: %s", inst.ID, msg))
	}
	taken := map[int]Occupant{}
	inUse := 0
	for i, eni := range inst.Slots {
		inUse++
		switch {
		case leavingIdx[i]:
			taken[i] = Leaving
		case in.isSibling(eni, w):
			taken[i] = Sibling
		default:
			taken[i] = Foreign
		}
	}
	for i := range usedNow {
		if taken[i] == free {
			inUse++
		}
		taken[i] = Sibling
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
	if r.have && r.o.Index >= 0 {
		preferred = r.o.Index
	}
	idx, reason, msg := ChooseIndex(in.Base, w.Rank, preferred, taken)
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
func (in PlanInput) isSibling(eni string, w Want) bool {
	for _, o := range in.ENIs {
		if o.ID == eni {
			return o.Node == w.Node && o.SubnetID != w.Subnet
		}
	}
	return false
}
