package nodeeni

import (
	"context"

	"maps"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// births is this process's part of the evidence: the creates it recorded
// (the cache may not show them yet) and the ENIs EC2 answered them with.
type births struct {
	mu      sync.Mutex
	written map[string]eniplan.NodeCreate // records this process wrote, by nonce
	born    map[string]string             // nonce -> ENI ID
	settled map[string]bool               // nonces no ENI will show: deleted, refused or never sent
}

func newBirths() *births {
	return &births{written: map[string]eniplan.NodeCreate{}, born: map[string]string{}, settled: map[string]bool{}}
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

func (b *births) recorded(list []eniplan.NodeCreate) {
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
func (b *births) everyRecord(ctx context.Context, c client.Reader) (eniplan.Evidence, error) {
	list := &v1alpha1.ENINodeList{}
	if err := c.List(ctx, list); err != nil {
		return eniplan.Evidence{}, err
	}
	held := make(map[string]*v1alpha1.ENINode, len(list.Items))
	for i := range list.Items {
		held[list.Items[i].Name] = &list.Items[i]
	}
	return b.evidence(eniplan.RecordsOf(held, "")), nil
}

func (b *births) evidence(r eniplan.Records) eniplan.Evidence {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := eniplan.Evidence{Records: eniplan.Records{Entries: r.Entries, Creates: maps.Clone(r.Creates), Bound: r.Bound}, Born: maps.Clone(b.born)}
	if ev.Creates == nil {
		ev.Creates = map[string]eniplan.NodeCreate{}
	}
	for n, p := range b.written {
		if _, ok := ev.Creates[n]; !ok {
			ev.Creates[n] = p
		}
	}
	return ev
}

// createsUnsettled reports whether a NodeENI being deleted must wait for
// a create that may have made an ENI not visible yet.
func (b *births) createsUnsettled(rec eniplan.Records, left []awstypes.ENI, now time.Time) bool {
	ev := b.evidence(rec).Showing(left)
	for n, p := range ev.Creates {
		if eniplan.Unsettled(p, ev.Shown[n], b.isSettled(n), now) {
			return true
		}
	}
	return false
}
