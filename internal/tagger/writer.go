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

// writeTimeout bounds one pod's write, and the record of its outcome.
const writeTimeout = 2 * time.Minute

// writer applies the pods' planned tag writes off the reconcile workers
// and records their outcome. Workers waiting on AWS would cap how many
// pods share one batched CreateTags, so each queued write runs in a
// goroutine of its own, up to maxWrites at once; the client batches them.
// A write that succeeds is recorded (pod, condition, ledger) by one of a
// few recorders: a change costs one reconcile. One that fails is kept for
// the pod's next reconcile, which reports it and backs off.
//
// Writing and recording are separate stages because they wait on
// different budgets: EC2's and the Kubernetes client's (--kube-api-qps).
// Were a write's slot held until its record was made, a burst larger than
// maxWrites would tag ENIs only as fast as the API budget records them.
type writer struct {
	queue *workqueue.Typed[string] // pod keys with a write to do
	slots chan struct{}            // bounds the writes in flight
	// records holds the pod keys whose write succeeded, to be recorded
	// by recorders goroutines.
	records   *workqueue.Typed[string]
	recorders int
	// write makes the AWS writes of a pod's plan; record records their
	// outcome.
	write  func(context.Context, *podWork) error
	record func(context.Context, *podWork)
	// requeue asks for a reconcile of a pod.
	requeue func(key string)

	mu   sync.Mutex
	jobs map[string]*podWork // queued, in flight or being recorded, by pod key
	// failed holds the error of a write until the pod's reconcile takes it.
	failed map[string]error
	// revisit marks pods a reconcile was turned away from while their
	// write was under way: they are requeued when it ends.
	revisit map[string]bool
}

// writerStages are the two stages of a pod's write.
type writerStages struct {
	write  func(context.Context, *podWork) error
	record func(context.Context, *podWork)
}

func newWriter(name string, maxWrites, recorders int, stages writerStages, requeue func(string)) *writer {
	return &writer{
		queue:   workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name}),
		records: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name + "-records"}),
		slots:   make(chan struct{}, maxWrites), recorders: max(recorders, 1),
		write: stages.write, record: stages.record, requeue: requeue,
		jobs: map[string]*podWork{}, failed: map[string]error{}, revisit: map[string]bool{},
	}
}

// submit queues a pod's write.
func (w *writer) submit(pw *podWork) {
	w.mu.Lock()
	w.jobs[pw.key] = pw
	w.failed = without(w.failed, pw.key)
	w.mu.Unlock()
	w.queue.Add(pw.key)
}

// busy reports whether a write of the pod is queued, in flight or being
// recorded; the pod is then requeued when it ends.
func (w *writer) busy(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.jobs[key]
	if ok {
		w.revisit[key] = true
	}
	return ok
}

// failure returns, once, the error of the pod's last write.
func (w *writer) failure(key string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.failed[key]
	w.failed = without(w.failed, key)
	return err
}

// Start runs the writes until ctx ends (a manager.Runnable: the writes
// end with the manager, not with the reconcile that planned them).
func (w *writer) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
		w.records.ShutDown()
	}()
	var running sync.WaitGroup
	defer running.Wait()
	for range w.recorders {
		running.Add(1)
		go func() {
			defer running.Done()
			w.recordLoop(ctx)
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

// run makes one pod's AWS writes and hands a success to the recorders.
func (w *writer) run(ctx context.Context, key string) {
	defer func() {
		<-w.slots
		w.queue.Done(key)
	}()
	w.mu.Lock()
	pw := w.jobs[key]
	w.mu.Unlock()
	if pw == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	err := w.write(wctx, pw)
	cancel()
	if err != nil {
		w.finish(key, err)
		return
	}
	w.records.Add(key)
}

// recordLoop records the outcome of successful writes until ctx ends.
// What is left unrecorded at the end is found by the next leader's
// reconcile: the ENI carries the tags, and recording them costs no AWS
// call.
func (w *writer) recordLoop(ctx context.Context) {
	for {
		key, shutdown := w.records.Get()
		if shutdown {
			return
		}
		w.mu.Lock()
		pw := w.jobs[key]
		w.mu.Unlock()
		if pw != nil {
			rctx, cancel := context.WithTimeout(ctx, writeTimeout)
			w.record(rctx, pw)
			cancel()
		}
		w.records.Done(key)
		w.finish(key, nil)
	}
}

// finish ends a pod's job: a failure is kept for its next reconcile,
// which is asked for, as it is for a reconcile turned away meanwhile.
func (w *writer) finish(key string, err error) {
	w.mu.Lock()
	revisit := w.revisit[key]
	w.jobs, w.revisit = without(w.jobs, key), without(w.revisit, key)
	if err != nil {
		w.failed[key] = err
	}
	w.mu.Unlock()
	if err != nil || revisit {
		w.requeue(key)
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
