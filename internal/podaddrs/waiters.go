package podaddrs

import (
	"net/netip"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// waiters remembers which node waits for an address another ENI holds,
// so the pass that unassigns it there queues that node at once. IPAMs
// such as whereabouts hand a freed address to the next pod, often on
// another node, whose pass may come first: without this it would wait
// for its node's resync.
type waiters struct {
	mu     sync.Mutex
	byAddr map[netip.Addr]string
	byNode map[string][]netip.Addr
	queue  chan event.GenericEvent
}

func newWaiters() *waiters {
	return &waiters{byAddr: map[netip.Addr]string{}, byNode: map[string][]netip.Addr{}, queue: make(chan event.GenericEvent, 1024)}
}

// wait replaces the addresses node waits for.
func (w *waiters) wait(node string, addrs []netip.Addr) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.byNode[node] {
		if w.byAddr[a] == node {
			delete(w.byAddr, a)
		}
	}
	delete(w.byNode, node)
	for _, a := range addrs {
		w.byAddr[a] = node
	}
	if len(addrs) > 0 {
		w.byNode[node] = addrs
	}
}

// released queues the nodes that wait for any of addrs. A full queue
// drops the event: that node is still checked at its resync.
func (w *waiters) released(addrs map[netip.Addr]bool) {
	w.mu.Lock()
	nodes := map[string]bool{}
	for a := range addrs {
		if n, ok := w.byAddr[a]; ok {
			nodes[n] = true
		}
	}
	w.mu.Unlock()
	for n := range nodes {
		select {
		case w.queue <- event.GenericEvent{Object: &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: n}}}:
		default:
		}
	}
}

// forget drops a node's waits (its ENINode is gone).
func (w *waiters) forget(node string) { w.wait(node, nil) }
