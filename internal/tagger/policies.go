package tagger

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// DefaultTagsPolicy names the --default-tags flag's tags where the pod's
// condition says which policy set a key. No ENITagPolicy can have the
// name: Kubernetes names do not start with '-'.
const DefaultTagsPolicy = "--default-tags"

// Policies are the compiled ENITagPolicies the tagger applies, and the
// --default-tags flag's. The operator builds them before the manager's
// cache (whose pod transform asks which pods they select) and hands them
// to Setup; the policy controller keeps them in line with the cluster.
type Policies struct {
	compiler *tagpolicy.Compiler
	flag     *tagpolicy.Policy // nil without --default-tags

	mu   sync.RWMutex
	list []*tagpolicy.Policy // sorted by name
	// namespaces reads a namespace's metadata (the manager's cache); nil
	// until Setup.
	namespaces client.Reader
	// loaded is closed once the policies the cluster had at start are
	// compiled: a pod reconciled before would lose their tags, and get
	// them back a moment later.
	loaded     chan struct{}
	loadedOnce sync.Once
	// onChange are called after every change of the policies (the NodeENI
	// controller's requeue of every NodeENI).
	onChange []func()
}

// NewPolicies compiles the --default-tags flag's tags; no ENITagPolicy is
// applied until the policy controller reads them.
func NewPolicies(defaultTags map[string]string) (*Policies, error) {
	c, err := tagpolicy.NewCompiler()
	if err != nil {
		return nil, err
	}
	p := &Policies{compiler: c, loaded: make(chan struct{})}
	if len(defaultTags) > 0 {
		if p.flag, err = c.Constant(DefaultTagsPolicy, defaultTags); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// markLoaded says the cluster's policies are compiled (or not applied).
func (p *Policies) markLoaded() { p.loadedOnce.Do(func() { close(p.loaded) }) }

// Loaded reports whether the policies the cluster had at start are
// compiled.
func (p *Policies) Loaded() bool {
	select {
	case <-p.loaded:
		return true
	default:
		return false
	}
}

// waitLoaded waits until the policies the cluster had at start are
// compiled.
func (p *Policies) waitLoaded(ctx context.Context) error {
	select {
	case <-p.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// put replaces the named policy (nil removes it) and returns the one it
// replaced.
func (p *Policies) put(name string, pol *tagpolicy.Policy) (old *tagpolicy.Policy) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, found := slices.BinarySearchFunc(p.list, name, func(q *tagpolicy.Policy, n string) int { return strings.Compare(q.Name(), n) })
	list := slices.Clone(p.list) // readers keep the slice they were given
	switch {
	case found && pol == nil:
		old = list[i]
		list = slices.Delete(list, i, i+1) // zeroes the old last element
	case found:
		old, list[i] = list[i], pol
	case pol != nil:
		list = slices.Insert(list, i, pol)
	}
	p.list = list
	return old
}

// OnChange registers f to be called after each change of the policies,
// before Setup's manager starts.
func (p *Policies) OnChange(f func()) { p.onChange = append(p.onChange, f) }

// changed calls the OnChange functions.
func (p *Policies) changed() {
	for _, f := range p.onChange {
		f()
	}
}

// NodeTags are the tags of a node's NodeENI interfaces: the policies
// that select the node merged with the NodeENI's spec.tags, as a pod's
// with its annotation. When an expression fails for the node (or a
// policy that selects it does not compile) the error says so and the
// spec.tags alone are given.
func (p *Policies) NodeTags(node *corev1.Node, specTags map[string]string) (map[string]string, error) {
	var list []*tagpolicy.Policy
	for _, q := range p.all() {
		if tagpolicy.MatchesNode(q, node.Labels) {
			list = append(list, q)
		}
	}
	if len(list) == 0 {
		return specTags, nil
	}
	in := tagpolicy.Inputs{
		Pod:       tagpolicy.Pod{Labels: map[string]string{}},
		Namespace: tagpolicy.Namespace{Labels: map[string]string{}},
		Node: tagpolicy.Node{Name: node.Name, Labels: orEmpty(node.Labels),
			Zone: awsnode.Zone(node), InstanceType: node.Labels[corev1.LabelInstanceTypeStable]},
	}
	res := tagpolicy.EvaluateNode(list, in, orEmpty(specTags))
	if res.Refused != nil {
		return specTags, res.Refused
	}
	return res.Tags, nil
}

// all returns the ENITagPolicies, sorted by name; the caller must not
// change the slice.
func (p *Policies) all() []*tagpolicy.Policy {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.list
}

// active tells whether any ENITagPolicy exists: without one, pods the
// annotation does not name cost the tagger nothing.
func (p *Policies) active() bool { return len(p.all()) > 0 }

// forPod returns the policies that select a pod, with the flag's when it
// applies, and whether any ENITagPolicy selects it. The flag's tags go on
// the ENIs the tagger tags anyway (an annotated or selected pod): it does
// not make every pod of the cluster the tagger's business.
func (p *Policies) forPod(namespaceLabels, podLabels map[string]string, annotated bool) (list []*tagpolicy.Policy, selected bool) {
	for _, q := range p.all() {
		if tagpolicy.Matches(q, namespaceLabels, podLabels) {
			list = append(list, q)
		}
	}
	selected = len(list) > 0
	if p.flag != nil && (annotated || selected) {
		list = append(list, p.flag)
	}
	return list, selected
}

// selects tells whether an ENITagPolicy selects a pod of the namespace
// with these labels: the pod cache's transform keeps such a pod whole
// and the predicate lets it through.
func (p *Policies) selects(ctx context.Context, namespace string, podLabels map[string]string) bool {
	if !p.active() || p.namespaces == nil {
		return false
	}
	ns, _ := p.namespaceLabels(ctx, namespace)
	_, selected := p.forPod(ns, podLabels, false)
	return selected
}

// namespacesSelected names the namespaces of the cache the selector
// selects.
func (p *Policies) namespacesSelected(ctx context.Context, sel labels.Selector) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := p.namespaces.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names, nil
}

// namespaceLabels reads a namespace's labels from the cache; false when
// it is not there (not yet seen, or gone).
func (p *Policies) namespaceLabels(ctx context.Context, name string) (map[string]string, bool) {
	if p.namespaces == nil {
		return nil, false
	}
	ns := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	if err := p.namespaces.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		return nil, false
	}
	return ns.Labels, true
}
