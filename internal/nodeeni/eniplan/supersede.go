package eniplan

import "fmt"

// The make-before-break decision of a spec change: whether a node's
// superseded ENIs stay until their replacements are attached.

// decideSuperseded decides, node by node, whether its superseded ENIs
// stay (ID -> status message) or go now:
//   - every want of the node is attached: they go (the replacement is in place);
//   - every want is attached or placeable with them still in place: they
//     stay, and the replacements are created and attached first;
//   - a want is placeable only once they are gone (they hold its index or
//     the instance's last slot) and is then fully satisfiable: they go
//     first. A same-index replacement necessarily leaves a gap: EC2 cannot
//     attach two ENIs at one index;
//   - otherwise (the new spec cannot be met on this node: index beyond
//     the type, index held by a foreign interface, no subnet in the zone,
//     security groups not found, ...) they stay and the node is reported
//     with the reason (trial blocks are kept in p.held).
func (p *Plan) decideSuperseded(in PlanInput, c classified) map[string]string {
	keep := map[string]string{}
	for node, olds := range c.superseded {
		msg := p.decideNode(in, c, node, olds)
		for _, o := range olds {
			if msg != "" {
				keep[o.ID] = msg
			}
		}
	}
	return keep
}

// decideNode returns why a node's superseded ENIs stay, or "" when they go.
func (p *Plan) decideNode(in PlanInput, c classified, node string, olds []Owned) string {
	wants := c.byNode[node]
	if len(wants) == 0 {
		return "kept: the new spec gives this node no ENI (see the Degraded condition)"
	}
	satisfied, creates := true, false
	for _, w := range wants {
		o, have := c.chosen[keyOf(w)]
		if !have || !attachedTo(o, w.Instance) {
			satisfied, creates = false, creates || !have
		}
	}
	if satisfied {
		return ""
	}
	inst, known := in.Instances[wants[0].Instance]
	if !known || (creates && in.SecurityGroups == nil) {
		return "kept until its replacement can be created and attached"
	}
	with := placeNode(in, c, wants, inst, unionIdx(c.leavingOn[inst.ID], olds, in.Settings.Card))
	if blocksOf(with) == nil {
		return "kept until its replacement is attached"
	}
	without := placeNode(in, c, wants, inst.without(olds), c.leavingOn[inst.ID])
	if bs := blocksOf(without); bs != nil {
		if p.held == nil {
			p.held = map[string][]Blocked{}
		}
		for i := range bs {
			bs[i].Message += "; the node keeps its current ENI until the spec can be met"
		}
		p.held[node] = bs
		return fmt.Sprintf("kept: the new spec cannot be met on this node (%s)", bs[0].Reason)
	}
	return "" // a swap: remove first, then place
}

// unionIdx returns the indexes of leaving plus those of some ENIs on a
// network card.
func unionIdx(leaving map[int]bool, olds []Owned, card int) map[int]bool {
	out := map[int]bool{}
	for i := range leaving {
		out[i] = true
	}
	for _, o := range olds {
		if o.Attachment != nil && o.Attachment.NetworkCardIndex == card {
			out[o.Attachment.DeviceIndex] = true
		}
	}
	return out
}

// without returns the instance as it is once some ENIs are detached.
func (v InstanceView) without(olds []Owned) InstanceView {
	slots := make(map[int]string, len(v.Slots))
	for i, id := range v.Slots {
		slots[i] = id
	}
	for _, o := range olds {
		if a := o.Attachment; a != nil && slots[a.DeviceIndex] == o.ID {
			delete(slots, a.DeviceIndex)
		}
	}
	v.Slots = slots
	return v
}
