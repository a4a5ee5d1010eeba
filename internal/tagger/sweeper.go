package tagger

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// What a sweep is for: the pods of a policy, or of a namespace.
const (
	sweepPolicy    = "policy/"
	sweepNamespace = "namespace/"
)

// sweepPageSize is the pods one list request of a sweep reads.
const sweepPageSize = 500

// sweeper brings to a reconcile the pods a policy or namespace change
// may affect: those the tally says the policy selected (they may lose its
// tags) and those it selects now, listed from the API server by its pod
// selector, as metadata, a page at a time (the pod cache holds most pods
// as stubs without labels). Sweeps run one at a time, off the
// controllers' workers, and a burst of changes to one policy is one
// sweep.
type sweeper struct {
	api      client.Reader
	policies *Policies
	tally    *policyTally
	requeue  func(key string)
	queue    workqueue.TypedRateLimitingInterface[string]
	// namespace limits sweeps to the tagger's --watch-namespace ("": all).
	namespace string
}

func newSweeper(api client.Reader, policies *Policies, tally *policyTally, requeue func(string), namespace string) *sweeper {
	return &sweeper{api: api, policies: policies, tally: tally, requeue: requeue, namespace: namespace,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "tag-policy-sweeps"})}
}

func (s *sweeper) add(what string) { s.queue.Add(what) }

// Start runs sweeps until ctx ends.
func (s *sweeper) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		what, shutdown := s.queue.Get()
		if shutdown {
			return nil
		}
		if err := s.sweep(ctx, what); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Info("sweeping the pods of a tag policy change failed; retrying", "sweep", what, "error", bounded.Error(err))
			s.queue.AddRateLimited(what)
		} else {
			s.queue.Forget(what)
		}
		s.queue.Done(what)
	}
}

func (s *sweeper) sweep(ctx context.Context, what string) error {
	if name, ok := strings.CutPrefix(what, sweepPolicy); ok {
		for _, key := range s.tally.podsOf(name) {
			s.requeue(key)
		}
		for _, p := range s.policies.all() {
			if p.Name() == name {
				return s.listSelected(ctx, p)
			}
		}
		return nil
	}
	ns, _ := strings.CutPrefix(what, sweepNamespace)
	if s.namespace != "" && ns != s.namespace {
		return nil
	}
	for _, key := range s.tally.podsIn(ns) {
		s.requeue(key)
	}
	nsLabels, _ := s.policies.namespaceLabels(ctx, ns)
	return s.list(ctx, []client.ListOption{client.InNamespace(ns)}, func(pod *metav1.PartialObjectMetadata) bool {
		_, selected := s.policies.forPod(nsLabels, pod.Labels, false)
		return selected
	})
}

// listSelected requeues the pods the policy selects now: listed from the
// namespaces its namespace selector selects (the namespaces' cache says
// which), or from all at once when it selects every namespace. A policy
// that selects no namespace, or no pod (one of NodeENI interfaces),
// costs no list.
func (s *sweeper) listSelected(ctx context.Context, p *tagpolicy.Policy) error {
	namespaces, pods := p.Selectors()
	if namespaces == nil || pods == nil || p.ForNodes() {
		return nil
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: pods}}
	all := func(*metav1.PartialObjectMetadata) bool { return true }
	if namespaces.Empty() {
		if s.namespace != "" {
			opts = append(opts, client.InNamespace(s.namespace))
		}
		return s.list(ctx, opts, all)
	}
	selected, err := s.policies.namespacesSelected(ctx, namespaces)
	if err != nil {
		return err
	}
	for _, ns := range selected {
		if s.namespace != "" && ns != s.namespace {
			continue
		}
		if err := s.list(ctx, append(opts[:len(opts):len(opts)], client.InNamespace(ns)), all); err != nil {
			return err
		}
	}
	return nil
}

// list pages through the pods' metadata and requeues those wanted.
func (s *sweeper) list(ctx context.Context, opts []client.ListOption, wanted func(*metav1.PartialObjectMetadata) bool) error {
	page := &metav1.PartialObjectMetadataList{}
	page.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	opts = append(opts, client.Limit(sweepPageSize))
	for next := opts; ; next = append(opts[:len(opts):len(opts)], client.Continue(page.Continue)) {
		if err := s.api.List(ctx, page, next...); err != nil {
			return err
		}
		for i := range page.Items {
			if wanted(&page.Items[i]) {
				s.requeue(page.Items[i].Namespace + "/" + page.Items[i].Name)
			}
		}
		if page.Continue == "" {
			return nil
		}
	}
}
