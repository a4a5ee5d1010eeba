package podaddrs

import (
	"net/netip"
	"sync"
	"time"
)

// The backoff of a claim EC2 refused: the first retry after
// backoffBase, each next one twice as late, at most backoffMax apart
// (a claim refused for good costs two calls an hour).
const (
	backoffBase = 30 * time.Second
	backoffMax  = 30 * time.Minute
)

// backoffs remembers, per node, the claims EC2 refused (an Assign it
// refused, or a holder it showed), so a pass refuses them again without
// a call until they are due. It lives as long as the process: a restart
// costs each such claim one more call.
type backoffs struct {
	mu     sync.Mutex
	byNode map[string]map[claimKey]backoff
}

type backoff struct {
	refusal  refusal
	attempts int
	due      time.Time
}

func newBackoffs() *backoffs { return &backoffs{byNode: map[string]map[claimKey]backoff{}} }

// active returns the node's claims not yet due at now, and when the
// first of them is due (zero when none).
func (b *backoffs) active(node string, now time.Time) (map[claimKey]refusal, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[claimKey]refusal{}
	var next time.Time
	for k, e := range b.byNode[node] {
		if now.Before(e.due) {
			out[k] = e.refusal
			if next.IsZero() || e.due.Before(next) {
				next = e.due
			}
		}
	}
	return out, next
}

// update records a pass: the claims EC2 refused in it are put off
// (twice as long as the last time for one refused again); the claims
// the node's pods no longer make, and those assigned, are forgotten.
func (b *backoffs) update(node string, refused map[claimKey]refusal, claimed map[claimKey]bool, assigned map[netip.Addr]bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.byNode[node]
	if m == nil {
		m = map[claimKey]backoff{}
	}
	for k := range m {
		if !claimed[k] || assigned[k.Addr] {
			delete(m, k)
		}
	}
	for k, f := range refused {
		e := m[k]
		e.attempts++
		e.refusal, e.due = f, now.Add(delay(e.attempts))
		m[k] = e
	}
	if len(m) == 0 {
		delete(b.byNode, node)
		return
	}
	b.byNode[node] = m
}

// delay is how long a claim refused attempts times waits for its next
// call.
func delay(attempts int) time.Duration {
	d := backoffBase
	for i := 1; i < attempts && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// released makes the claims of addrs due at once, on every node: the
// ENI that held them let them go.
func (b *backoffs) released(addrs map[netip.Addr]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for node, m := range b.byNode {
		for k := range m {
			if addrs[k.Addr] {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(b.byNode, node)
		}
	}
}

// forget drops a node's claims (its ENINode is gone).
func (b *backoffs) forget(node string) {
	b.mu.Lock()
	delete(b.byNode, node)
	b.mu.Unlock()
}
