package tagger

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// writeTimeout bounds one pod's write, and its conclusion.
const writeTimeout = 2 * time.Minute

// writer runs the pods' planned tag writes off the reconcile workers,
// each in a goroutine of its own up to maxWrites at once, so that many
// pods share one batched CreateTags. A successful write is handed to one
// of a few concluders (ledger, pod, condition), so a change costs one
// reconcile; a failed one is kept in the pod's entry for its next
// reconcile. The two stages wait on different budgets (EC2's and
// --kube-api-qps): a slot held until the conclusion would tag ENIs only as
// fast as the API budget allows. The writer keeps no per-pod state.
type writer struct {
	pods  *pods
	queue *workqueue.Typed[string] // pods with a write to do
	slots chan struct{}            // bounds the writes in flight
	// written holds the pods whose write succeeded, to be concluded by
	// concluders goroutines.
	written    *workqueue.Typed[string]
	concluders int
	stages     writerStages
}

// writerStages are the two stages of a pod's write, the AWS writes of
// its plan and the conclusion of a successful one, and how the writer
// asks for a pod's reconcile.
type writerStages struct {
	write    func(context.Context, *podWork) error
	conclude func(context.Context, *podWork)
	requeue  func(key string)
}

func newWriter(name string, maxWrites, concluders int, pods *pods, stages writerStages) *writer {
	return &writer{
		pods:  pods,
		queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name}),
		// "-records": the queue's metric name, which dashboards read.
		written: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name + "-records"}),
		slots:   make(chan struct{}, maxWrites), concluders: max(concluders, 1),
		stages: stages,
	}
}

// submit queues a pod's write.
func (w *writer) submit(pw *podWork) {
	w.pods.startWrite(pw)
	w.queue.Add(pw.key)
}

// Start runs the writes until ctx ends (a manager.Runnable: the writes
// end with the manager, not with the reconcile that planned them).
func (w *writer) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
		w.written.ShutDown()
	}()
	var running sync.WaitGroup
	defer running.Wait()
	for range w.concluders {
		running.Add(1)
		go func() {
			defer running.Done()
			w.concludeLoop(ctx)
		}()
	}
	for {
		key, shutdown := w.queue.Get()
		if shutdown {
			return nil
		}
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			w.queue.Done(key)
			return nil
		}
		running.Add(1)
		go func() {
			defer running.Done()
			w.run(ctx, key)
		}()
	}
}

// run makes one pod's AWS writes and hands a success to the concluders.
func (w *writer) run(ctx context.Context, key string) {
	defer func() {
		<-w.slots
		w.queue.Done(key)
	}()
	pw := w.pods.writeOf(key)
	if pw == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err := w.stages.write(wctx, pw)
	cancel()
	if err != nil {
		w.end(key, err)
		return
	}
	w.written.Add(key)
}

// concludeLoop concludes successful writes until ctx ends. What is left
// unconcluded at the end is found by the next leader's reconcile: the ENI
// carries the tags, and recording them costs no AWS call.
func (w *writer) concludeLoop(ctx context.Context) {
	for {
		key, shutdown := w.written.Get()
		if shutdown {
			return
		}
		if pw := w.pods.writeOf(key); pw != nil {
			cctx, cancel := context.WithTimeout(ctx, writeTimeout)
			w.stages.conclude(cctx, pw)
			cancel()
		}
		w.written.Done(key)
		w.end(key, nil)
	}
}

// end ends a pod's write; the pod is reconciled again to report a
// failure, or if a reconcile was turned away meanwhile.
func (w *writer) end(key string, err error) {
	if w.pods.endWrite(key, err) {
		w.stages.requeue(key)
	}
}

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
