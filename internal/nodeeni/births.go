package nodeeni

import (
	"maps"
	"sync"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// An ENI is born proven: its CreateNetworkInterface carries a birth proof
// (internal/ownership) over a nonce the ENI's node's ENINode recorded
// (spec.creates) before the create. Only the operator writes ENINodes, so
// the records, the ENINodes' entries and this process's create answers
// are evidence no other principal can produce. A copy of an ENI's tags
// carries a nonce that is bound to another ENI, or that two ENIs show.

// nonceWindow is how long a recorded nonce no ENI shows is kept: the
// create may still be under way, or its ENI not yet visible (EC2 is
// eventually consistent; visibilityWindow).
const nonceWindow = 5 * time.Minute

// pendingCreate is a spec.creates record and the node whose ENINode
// holds it.
type pendingCreate struct {
	v1alpha1.PendingCreate
	Node string
}

// records is what the ENINodes hold for the ENIs of one NodeENI (or of
// all, for the collector and the inventory's metrics): entries by ENI ID
// and pending creates by nonce.
type records struct {
	entries map[string]v1alpha1.ENIAttachment
	pending map[string]pendingCreate
}

// recordsOf reads the records of the ENINodes, of the NodeENI named, or
// of every NodeENI when nodeENI is "".
func recordsOf(held map[string]*v1alpha1.ENINode, nodeENI string) records {
	r := records{entries: map[string]v1alpha1.ENIAttachment{}, pending: map[string]pendingCreate{}}
	for node, en := range held {
		for _, a := range en.Spec.Attachments {
			if nodeENI == "" || a.NodeENI == nodeENI {
				a.NodeID = node
				r.entries[a.ENIID] = a
			}
		}
		for _, c := range en.Spec.Creates {
			if nodeENI == "" || c.NodeENI == nodeENI {
				r.pending[c.Nonce] = pendingCreate{PendingCreate: c, Node: node}
			}
		}
	}
	return r
}

// births is this process's part of the evidence: the creates it recorded
// (the cache may not show them yet) and the ENIs EC2 answered them with.
type births struct {
	mu      sync.Mutex
	pending map[string]pendingCreate
	born    map[string]string // nonce -> ENI ID
	deleted map[string]bool   // nonces whose ENI this process deleted
}

func newBirths() *births {
	return &births{pending: map[string]pendingCreate{}, born: map[string]string{}, deleted: map[string]bool{}}
}

// gone records that the ENI showing a nonce was deleted.
func (b *births) gone(nonce string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleted[nonce] = true
}

// settled reports whether a nonce's create has no ENI to wait for: it
// was deleted by this process.
func (b *births) settled(nonce string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deleted[nonce]
}

func (b *births) recorded(list []pendingCreate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range list {
		b.pending[p.Nonce] = p
	}
}

func (b *births) answered(nonce, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.born[nonce] = id
}

// bornAs is the ENI EC2 answered a nonce's create with, "" when unknown.
func (b *births) bornAs(nonce string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.born[nonce]
}

// forget drops a nonce whose record is pruned.
func (b *births) forget(nonce string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, nonce)
	delete(b.born, nonce)
	delete(b.deleted, nonce)
}

// evidence joins the ENINodes' records with this process's.
func (b *births) evidence(r records) evidence {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := evidence{records: records{entries: r.entries, pending: maps.Clone(r.pending)}, born: maps.Clone(b.born)}
	if ev.pending == nil {
		ev.pending = map[string]pendingCreate{}
	}
	for n, p := range b.pending {
		if _, ok := ev.pending[n]; !ok {
			ev.pending[n] = p
		}
	}
	return ev
}

// evidence is what vouches for ENIs beside their proofs: the records, the
// create answers, and how many ENIs of the list judged show each nonce.
type evidence struct {
	records
	born  map[string]string
	shown map[string]int
}

// showing counts the nonces a list's ENIs show.
func (ev evidence) showing(list []ec2.ENI) evidence {
	ev.shown = map[string]int{}
	for _, e := range list {
		if n := e.Tags[TagNonce]; n != "" {
			ev.shown[n]++
		}
	}
	return ev
}

// entryOf is the ENINode entry that names e where EC2 and its tags show
// it: the same NodeENI, node, instance, subnet and device index. Only the
// operator writes entries, and only of ENIs it trusted.
func (ev evidence) entryOf(e ec2.ENI) (v1alpha1.ENIAttachment, bool) {
	a, ok := ev.entries[e.ID]
	if !ok || a.NodeENI != e.Tags[TagNodeENI] || a.NodeID != e.Tags[TagNode] || a.InstanceID != e.Tags[TagInstance] ||
		a.SubnetID != e.SubnetID || int(a.DeviceIndex) != intTag(e.Tags, TagDeviceIndex) {
		return v1alpha1.ENIAttachment{}, false
	}
	return a, true
}

// birthOf judges an ENI whose birth proof verifies by its nonce: bound to
// it by this process's create answer, or the one ENI showing a nonce
// recorded for its NodeENI, node, subnet and index.
func (ev evidence) birthOf(e ec2.ENI) (reason, detail string) {
	nonce := e.Tags[TagNonce]
	if id, ok := ev.born[nonce]; ok {
		if id == e.ID {
			return "", ""
		}
		return UntrustedCopied, "shows the nonce of ENI " + id + ", which EC2 created for it"
	}
	p, ok := ev.pending[nonce]
	if !ok || p.NodeENI != e.Tags[TagNodeENI] || p.Node != e.Tags[TagNode] || p.SubnetID != e.SubnetID ||
		int(p.DeviceIndex) != intTag(e.Tags, TagDeviceIndex) {
		return UntrustedUnbound, "its proof's nonce is not one the operator recorded for it (a copy of an ENI's tags, or an ENI whose ENINode record was lost)"
	}
	if ev.shown[nonce] != 1 {
		return UntrustedSharedNonce, "another ENI shows the same nonce: one of them is a copy, so neither is acted on"
	}
	return "", ""
}

// birthClaim is what an ENI's birth proof binds: its nonce, the subnet
// EC2 shows it in, and its ownership tags as they are.
func birthClaim(e ec2.ENI) ownership.BirthClaim {
	t := e.Tags
	return ownership.BirthClaim{Nonce: t[TagNonce], Subnet: e.SubnetID, Cluster: t[TagCluster], NodeENI: t[TagNodeENI],
		NodeENIUID: t[TagNodeENIUID], Node: t[TagNode], Instance: t[TagInstance], DeviceIndex: t[TagDeviceIndex],
		DeviceIndexBase: t[TagDeviceIndexBase], CreatedAt: t[TagCreatedAt]}
}

// keepCreate decides whether a spec.creates record stays: not once an
// entry names an ENI showing its nonce (bound), and not once no ENI shows
// it and its ENI was deleted here (settled) or it is older than
// nonceWindow (the create never took effect, or its ENI is gone). An ENI
// showing it unbound keeps it: that ENI is still to be attached or
// removed.
func keepCreate(p v1alpha1.PendingCreate, showing []string, entries map[string]bool, settled bool, now time.Time) bool {
	for _, id := range showing {
		if entries[id] {
			return false
		}
	}
	return len(showing) > 0 || !settled && now.Sub(p.Since.Time) < nonceWindow
}

// unsettled reports whether a record may still have an ENI EC2 does not
// show yet: none shows it, it was not deleted here, and it is recent.
func unsettled(p pendingCreate, showing int, settled bool, now time.Time) bool {
	return showing == 0 && !settled && now.Sub(p.Since.Time) < nonceWindow
}

// createsUnsettled reports whether a NodeENI being deleted must wait for
// a create that may have made an ENI not visible yet.
func (r *reconciler) createsUnsettled(rec records, left []ec2.ENI) bool {
	ev := r.births.evidence(rec).showing(left)
	now := r.now()
	for n, p := range ev.pending {
		if unsettled(p, ev.shown[n], r.births.settled(n), now) {
			return true
		}
	}
	return false
}

func (r *reconciler) now() time.Time { return r.opts.Clock.Now() }
