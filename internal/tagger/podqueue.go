package tagger

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// podQueue hands out the tagger controller's own work queue, so a pod is
// requeued by key straight into it: never dropped, never blocking.
type podQueue struct {
	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// source is the controller's watch that captures its queue.
func (q *podQueue) source() source.Source {
	return source.Func(func(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.mu.Lock()
		q.queue = queue
		q.mu.Unlock()
		return nil
	})
}

// add requeues a pod by its namespace/name key. Before the controller
// starts there is nothing to do: its first list brings every pod.
func (q *podQueue) add(key string) {
	ns, name, _ := strings.Cut(key, "/")
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queue != nil {
		q.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
}
