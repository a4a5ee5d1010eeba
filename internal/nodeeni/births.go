package nodeeni

import (
	"context"

	"github.com/eni-operator/eni-operator/internal/awstypes"

	"maps"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
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

// nodeCreate is a spec.creates record and the node whose ENINode
// holds it.
type nodeCreate struct {
	v1alpha1.CreateRecord
	Node string
}

// records is what the ENINodes hold for the ENIs of one NodeENI (or of
// all, for the collector and the inventory's metrics): entries by ENI ID,
// records of creates by nonce, and the records bound to an ENI by its ID.
type records struct {
	entries map[string]v1alpha1.ENIAttachment
	creates map[string]nodeCreate
	bound   map[string]nodeCreate
}

// recordsOf reads the records of the ENINodes, of the NodeENI named, or
// of every NodeENI when nodeENI is "".
func recordsOf(held map[string]*v1alpha1.ENINode, nodeENI string) records {
	r := records{entries: map[string]v1alpha1.ENIAttachment{}, creates: map[string]nodeCreate{}, bound: map[string]nodeCreate{}}
	for node, en := range held {
		for _, a := range en.Spec.Attachments {
			if nodeENI == "" || a.NodeENI == nodeENI {
				a.NodeID = node
				r.entries[a.ENIID] = a
			}
		}
		for _, c := range en.Spec.Creates {
			if nodeENI == "" || c.NodeENI == nodeENI {
				p := nodeCreate{CreateRecord: c, Node: node}
				r.creates[c.Nonce] = p
				if c.ENIID != "" {
					r.bound[c.ENIID] = p
				}
			}
		}
	}
	return r
}

// births is this process's part of the evidence: the creates it recorded
// (the cache may not show them yet) and the ENIs EC2 answered them with.
type births struct {
	mu      sync.Mutex
	written map[string]nodeCreate // records this process wrote, by nonce
	born    map[string]string     // nonce -> ENI ID
	settled map[string]bool       // nonces no ENI will show: deleted, refused or never sent
}

func newBirths() *births {
	return &births{written: map[string]nodeCreate{}, born: map[string]string{}, settled: map[string]bool{}}
}

// settle records that no ENI will show a nonce: its ENI was deleted, or
// its create was refused or never sent.
func (b *births) settle(nonce string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled[nonce] = true
}

// isSettled reports whether a nonce's create has no ENI to wait for.
func (b *births) isSettled(nonce string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.settled[nonce]
}

func (b *births) recorded(list []nodeCreate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range list {
		b.written[p.Nonce] = p
	}
}

func (b *births) answered(nonce, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.born[nonce] = id
}

// forget drops a nonce whose record is pruned.
func (b *births) forget(nonce string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.written, nonce)
	delete(b.born, nonce)
	delete(b.settled, nonce)
}

// evidence joins the ENINodes' records with this process's.
// everyRecord is the evidence of every ENINode, for judging ENIs of any
// NodeENI (the collector, the inventory's metrics).
func (b *births) everyRecord(ctx context.Context, c client.Reader) (evidence, error) {
	list := &v1alpha1.ENINodeList{}
	if err := c.List(ctx, list); err != nil {
		return evidence{}, err
	}
	held := make(map[string]*v1alpha1.ENINode, len(list.Items))
	for i := range list.Items {
		held[list.Items[i].Name] = &list.Items[i]
	}
	return b.evidence(recordsOf(held, "")), nil
}

func (b *births) evidence(r records) evidence {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := evidence{records: records{entries: r.entries, creates: maps.Clone(r.creates), bound: r.bound}, born: maps.Clone(b.born)}
	if ev.creates == nil {
		ev.creates = map[string]nodeCreate{}
	}
	for n, p := range b.written {
		if _, ok := ev.creates[n]; !ok {
			ev.creates[n] = p
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
func (ev evidence) showing(list []awstypes.ENI) evidence {
	ev.shown = map[string]int{}
	for _, e := range list {
		if n := e.Tags[TagNonce]; n != "" {
			ev.shown[n]++
		}
	}
	return ev
}

// vouched reports whether what only the operator writes names e where
// EC2 and its tags show it (the same NodeENI, node, instance or subnet,
// and device index): its ENINode entry, or a record of its create bound
// to its ID. The operator writes them only of ENIs it trusted.
func (ev evidence) vouched(e awstypes.ENI) bool {
	if a, ok := ev.entries[e.ID]; ok && a.NodeENI == e.Tags[TagNodeENI] && a.NodeID == e.Tags[TagNode] &&
		a.InstanceID == e.Tags[TagInstance] && a.SubnetID == e.SubnetID && int(a.DeviceIndex) == intTag(e.Tags, TagDeviceIndex) {
		return true
	}
	p, ok := ev.bound[e.ID]
	return ok && p.matches(e)
}

// matches reports whether a record is of e's NodeENI, node, subnet and
// device index.
func (p nodeCreate) matches(e awstypes.ENI) bool {
	return p.NodeENI == e.Tags[TagNodeENI] && p.Node == e.Tags[TagNode] && p.SubnetID == e.SubnetID &&
		int(p.DeviceIndex) == intTag(e.Tags, TagDeviceIndex)
}

// birthOf judges an ENI whose birth proof verifies by its nonce: bound to
// it by this process's create answer or by its record, or the one ENI
// showing a nonce recorded for its NodeENI, node, subnet and index.
func (ev evidence) birthOf(e awstypes.ENI) (reason, detail string) {
	nonce := e.Tags[TagNonce]
	if id, ok := ev.born[nonce]; ok {
		if id == e.ID {
			return "", ""
		}
		return UntrustedCopied, "shows the nonce of ENI " + id + ", which EC2 created for it"
	}
	p, ok := ev.creates[nonce]
	if !ok || !p.matches(e) {
		return UntrustedUnbound, "its proof's nonce is not one the operator recorded for it (a copy of an ENI's tags, or an ENI whose ENINode record was lost)"
	}
	if p.ENIID != "" {
		return UntrustedCopied, "shows the nonce of ENI " + p.ENIID + ", which its ENINode's record binds"
	}
	if ev.shown[nonce] != 1 {
		return UntrustedSharedNonce, "another ENI shows the same nonce: one of them is a copy, so neither is acted on"
	}
	return "", ""
}

// birthClaim is what an ENI's birth proof binds: its nonce, the subnet
// EC2 shows it in, and its ownership tags as they are.
func birthClaim(e awstypes.ENI) ownership.BirthClaim {
	t := e.Tags
	return ownership.BirthClaim{Nonce: t[TagNonce], Subnet: e.SubnetID, Cluster: t[TagCluster], NodeENI: t[TagNodeENI],
		NodeENIUID: t[TagNodeENIUID], Node: t[TagNode], Instance: t[TagInstance], DeviceIndex: t[TagDeviceIndex],
		DeviceIndexBase: t[TagDeviceIndexBase], CreatedAt: t[TagCreatedAt]}
}

// updateCreate decides what becomes of a record of a create: bound to
// the one ENI showing its nonce once the plan has it attached; dropped
// once no ENI shows it and this process knows none will (settled: its
// ENI deleted here, its create refused or never sent) or nonceWindow
// has passed since it was recorded (the create never took effect, or
// its ENI is gone).
func updateCreate(c v1alpha1.CreateRecord, showing []string, attached map[string]bool, settled bool, now time.Time) (v1alpha1.CreateRecord, bool) {
	if len(showing) == 0 {
		return c, !settled && now.Sub(c.Since.Time) < nonceWindow
	}
	if c.ENIID == "" && len(showing) == 1 && attached[showing[0]] {
		c.ENIID = showing[0]
	}
	return c, true
}

// unsettled reports whether a record may still have an ENI EC2 does not
// show yet: none shows it, this process does not know none will, and it
// is recent.
func unsettled(p nodeCreate, showing int, settled bool, now time.Time) bool {
	return showing == 0 && !settled && now.Sub(p.Since.Time) < nonceWindow
}

// createsUnsettled reports whether a NodeENI being deleted must wait for
// a create that may have made an ENI not visible yet.
func (r *reconciler) createsUnsettled(rec records, left []awstypes.ENI) bool {
	ev := r.births.evidence(rec).showing(left)
	now := r.now()
	for n, p := range ev.creates {
		if unsettled(p, ev.shown[n], r.births.isSettled(n), now) {
			return true
		}
	}
	return false
}

func (r *reconciler) now() time.Time { return r.opts.Clock.Now() }
