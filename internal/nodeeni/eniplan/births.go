package eniplan

import (
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// An ENI is born proven: its CreateNetworkInterface carries a birth proof
// (internal/ownership) over a nonce the ENI's node's ENINode recorded
// (spec.creates) before the create. Only the operator writes ENINodes, so
// the records, the ENINodes' entries and this process's create answers
// are evidence no other principal can produce. A copy of an ENI's tags
// carries a nonce that is bound to another ENI, or that two ENIs show.

// NonceWindow is how long a recorded nonce no ENI shows is kept: the
// create may still be under way, or its ENI not yet visible (EC2 is
// eventually consistent; VisibilityWindow).
const NonceWindow = 5 * time.Minute

// NodeCreate is a spec.creates record and the node whose ENINode
// holds it.
type NodeCreate struct {
	v1alpha1.CreateRecord
	Node string
}

// Records is what the ENINodes hold for the ENIs of one NodeENI (or of
// all, for the collector and the inventory's metrics): entries by ENI ID,
// records of creates by nonce, and the records bound to an ENI by its ID.
type Records struct {
	Entries map[string]v1alpha1.ENIAttachment
	Creates map[string]NodeCreate
	Bound   map[string]NodeCreate
}

// RecordsOf reads the records of the ENINodes, of the NodeENI named, or
// of every NodeENI when nodeENI is "".
func RecordsOf(held map[string]*v1alpha1.ENINode, nodeENI string) Records {
	r := Records{Entries: map[string]v1alpha1.ENIAttachment{}, Creates: map[string]NodeCreate{}, Bound: map[string]NodeCreate{}}
	for node, en := range held {
		for _, a := range en.Spec.Attachments {
			if nodeENI == "" || a.NodeENI == nodeENI {
				a.NodeID = node
				r.Entries[a.ENIID] = a
			}
		}
		for _, c := range en.Spec.Creates {
			if nodeENI == "" || c.NodeENI == nodeENI {
				p := NodeCreate{CreateRecord: c, Node: node}
				r.Creates[c.Nonce] = p
				if c.ENIID != "" {
					r.Bound[c.ENIID] = p
				}
			}
		}
	}
	return r
}

// Evidence is what vouches for ENIs beside their proofs: the records, the
// create answers, and how many ENIs of the list judged show each nonce.
type Evidence struct {
	Records
	Born  map[string]string
	Shown map[string]int
}

// Showing counts the nonces a list's ENIs show.
func (ev Evidence) Showing(list []awstypes.ENI) Evidence {
	ev.Shown = map[string]int{}
	for _, e := range list {
		if n := e.Tags[TagNonce]; n != "" {
			ev.Shown[n]++
		}
	}
	return ev
}

// vouched reports whether what only the operator writes names e where
// EC2 and its tags show it (the same NodeENI, node, instance or subnet,
// and device index): its ENINode entry, or a record of its create bound
// to its ID. The operator writes them only of ENIs it trusted.
func (ev Evidence) vouched(e awstypes.ENI) bool {
	if a, ok := ev.Entries[e.ID]; ok && a.NodeENI == e.Tags[TagNodeENI] && a.NodeID == e.Tags[TagNode] &&
		a.InstanceID == e.Tags[TagInstance] && a.SubnetID == e.SubnetID && int(a.DeviceIndex) == intTag(e.Tags, TagDeviceIndex) {
		return true
	}
	p, ok := ev.Bound[e.ID]
	return ok && p.matches(e)
}

// matches reports whether a record is of e's NodeENI, node, subnet and
// device index.
func (p NodeCreate) matches(e awstypes.ENI) bool {
	return p.NodeENI == e.Tags[TagNodeENI] && p.Node == e.Tags[TagNode] && p.SubnetID == e.SubnetID &&
		int(p.DeviceIndex) == intTag(e.Tags, TagDeviceIndex)
}

// birthOf judges an ENI whose birth proof verifies by its nonce: bound to
// it by this process's create answer or by its record, or the one ENI
// showing a nonce recorded for its NodeENI, node, subnet and index.
func (ev Evidence) birthOf(e awstypes.ENI) (reason, detail string) {
	nonce := e.Tags[TagNonce]
	if id, ok := ev.Born[nonce]; ok {
		if id == e.ID {
			return "", ""
		}
		return UntrustedCopied, "shows the nonce of ENI " + id + ", which EC2 created for it"
	}
	p, ok := ev.Creates[nonce]
	if !ok || !p.matches(e) {
		return UntrustedUnbound, "its proof's nonce is not one the operator recorded for it (a copy of an ENI's tags, or an ENI whose ENINode record was lost)"
	}
	if p.ENIID != "" {
		return UntrustedCopied, "shows the nonce of ENI " + p.ENIID + ", which its ENINode's record binds"
	}
	if ev.Shown[nonce] != 1 {
		return UntrustedSharedNonce, "another ENI shows the same nonce: one of them is a copy, so neither is acted on"
	}
	return "", ""
}

// BirthClaim is what an ENI's birth proof binds: its nonce, the subnet
// EC2 shows it in, and its ownership tags as they are.
func BirthClaim(e awstypes.ENI) ownership.BirthClaim {
	t := e.Tags
	return ownership.BirthClaim{Nonce: t[TagNonce], Subnet: e.SubnetID, Cluster: t[TagCluster], NodeENI: t[TagNodeENI],
		NodeENIUID: t[TagNodeENIUID], Node: t[TagNode], Instance: t[TagInstance], DeviceIndex: t[TagDeviceIndex],
		DeviceIndexBase: t[TagDeviceIndexBase], CreatedAt: t[TagCreatedAt]}
}

// UpdateCreate decides what becomes of a record of a create: bound to
// the one ENI showing its nonce once the plan has it attached; dropped
// once no ENI shows it and this process knows none will (settled: its
// ENI deleted here, its create refused or never sent) or NonceWindow
// has passed since it was recorded (the create never took effect, or
// its ENI is gone).
func UpdateCreate(c v1alpha1.CreateRecord, showing []string, attached map[string]bool, settled bool, now time.Time) (v1alpha1.CreateRecord, bool) {
	if len(showing) == 0 {
		return c, !settled && now.Sub(c.Since.Time) < NonceWindow
	}
	if c.ENIID == "" && len(showing) == 1 && attached[showing[0]] {
		c.ENIID = showing[0]
	}
	return c, true
}

// Unsettled reports whether a record may still have an ENI EC2 does not
// show yet: none shows it, this process does not know none will, and it
// is recent.
func Unsettled(p NodeCreate, showing int, settled bool, now time.Time) bool {
	return showing == 0 && !settled && now.Sub(p.Since.Time) < NonceWindow
}
