// Package tagpolicy compiles ENITagPolicies and evaluates them for a pod:
// which tags its ENI should carry given the policies that select it and
// its own annotation, and which conflicts to report. Pure: it reads no
// cluster and calls no EC2; the tagger gathers the inputs.
package tagpolicy

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/google/cel-go/cel"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// AWS's limits on one EC2 tag.
const (
	MaxKeyLength   = 127
	MaxValueLength = 256
)

// Pod is what an expression reads of the pod, as variable pod.
type Pod struct {
	Name               string            `cel:"name"`
	Namespace          string            `cel:"namespace"`
	Labels             map[string]string `cel:"labels"`
	ServiceAccountName string            `cel:"serviceAccountName"`
	NodeName           string            `cel:"nodeName"`
}

// Namespace is the pod's namespace, as variable namespaceObject.
type Namespace struct {
	Name   string            `cel:"name"`
	Labels map[string]string `cel:"labels"`
}

// Owner is the pod's top-level owner, as variable owner: the Deployment,
// StatefulSet, DaemonSet, Job or CronJob found through ReplicaSets and
// Jobs, or the pod itself (kind Pod) when it has none.
type Owner struct {
	Kind string `cel:"kind"`
	Name string `cel:"name"`
}

// Node is the pod's node, as variable node. Zone and InstanceType come
// from the node's well-known labels.
type Node struct {
	Name         string            `cel:"name"`
	Labels       map[string]string `cel:"labels"`
	Zone         string            `cel:"zone"`
	InstanceType string            `cel:"instanceType"`
}

// Inputs are the variables of one pod's evaluation.
type Inputs struct {
	Pod       Pod
	Namespace Namespace
	Owner     Owner
	Node      Node
}

// Policy is a compiled ENITagPolicy. It is immutable and safe to share
// between goroutines.
type Policy struct {
	name             string
	priority         int32
	namespaces, pods labels.Selector
	// nodes is set for a policy of NodeENI interfaces (spec.nodeSelector),
	// which selects no pod.
	nodes                labels.Selector
	defaults, enforced   []rule
	externallyManagedKey map[string]bool
	// broken is why the policy does not compile: the pods it selects are
	// refused, their ENIs left as they are, until it is fixed.
	broken error
	// expressions is true when a rule's value is an expression.
	expressions bool
}

// Name is the policy's name.
func (p *Policy) Name() string { return p.name }

// Priority is the policy's spec.priority.
func (p *Policy) Priority() int32 { return p.priority }

// rule is one compiled entry of defaults or enforced.
type rule struct {
	key   string
	where string // how messages name it: enforced[2] (key "Team")
	value string
	prg   cel.Program // nil for a fixed value
}

// RuleError is why a policy does not compile: the rule at fault, the
// reason of its Ready condition and what to fix.
type RuleError struct {
	// Rule names the field: enforced[2] (key "Team"), namespaceSelector.
	Rule string
	// Reason is one of the api's TagPolicyReason* values.
	Reason string
	Err    error
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// Compile checks a policy's spec and compiles its expressions. The error
// is a *RuleError (errors.As) naming the first rule at fault. A policy
// whose selectors are valid is returned even then: Evaluate refuses the
// pods it selects, so a typo in a rule leaves their ENIs as they are
// instead of removing the policy's tags from all of them. A policy whose
// selectors are not valid (nil) selects no pod.
func (c *Compiler) Compile(name string, spec v1alpha1.ENITagPolicySpec) (*Policy, error) {
	var err error
	p := &Policy{name: name, priority: spec.Priority, externallyManagedKey: map[string]bool{}}
	if p.namespaces, err = selector("namespaceSelector", spec.NamespaceSelector); err != nil {
		return nil, err
	}
	if p.pods, err = selector("podSelector", spec.PodSelector); err != nil {
		return nil, err
	}
	if spec.NodeSelector != nil {
		if spec.NamespaceSelector != nil || spec.PodSelector != nil {
			return nil, &RuleError{Rule: "nodeSelector", Reason: v1alpha1.TagPolicyReasonInvalidSelector,
				Err: errors.New("a policy tags either pods (namespaceSelector, podSelector) or NodeENI interfaces (nodeSelector): set one kind of selector")}
		}
		if p.nodes, err = selector("nodeSelector", spec.NodeSelector); err != nil {
			return nil, err
		}
	}
	if err := c.compileSpec(p, spec); err != nil {
		broken := &Policy{name: p.name, priority: p.priority, namespaces: p.namespaces, pods: p.pods, nodes: p.nodes, broken: err}
		return broken, err
	}
	return p, nil
}

// Constant is a policy of fixed enforced tags that selects every pod:
// the --default-tags flag's, named name, below every ENITagPolicy.
func (c *Compiler) Constant(name string, tags map[string]string) (*Policy, error) {
	spec := v1alpha1.ENITagPolicySpec{Priority: math.MinInt32}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := v1alpha1.TagValue(tags[k])
		spec.Enforced = append(spec.Enforced, v1alpha1.TagRule{Key: k, Value: &v})
	}
	p, err := c.Compile(name, spec)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Broken is why the policy does not compile, nil when it does.
func (p *Policy) Broken() error { return p.broken }

// Expressions tells whether a rule's value is an expression, so the
// caller gathers the pod's owner and node only for such policies.
func (p *Policy) Expressions() bool { return p.expressions }

func (c *Compiler) compileSpec(p *Policy, spec v1alpha1.ENITagPolicySpec) error {
	env := c.env
	var err error
	for i, k := range spec.ExternallyManagedKeys {
		where := fmt.Sprintf("externallyManagedKeys[%d] (key %s)", i, bounded.Quoted(k))
		if err := checkKey(where, k); err != nil {
			return err
		}
		p.externallyManagedKey[k] = true
	}
	seen := map[string]string{}
	if p.defaults, err = compileRules(env, "defaults", spec.Defaults, p.externallyManagedKey, seen); err != nil {
		return err
	}
	if p.enforced, err = compileRules(env, "enforced", spec.Enforced, p.externallyManagedKey, seen); err != nil {
		return err
	}
	for _, r := range slices.Concat(p.defaults, p.enforced) {
		p.expressions = p.expressions || r.prg != nil
	}
	return nil
}

func selector(field string, s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, &RuleError{Rule: field, Reason: v1alpha1.TagPolicyReasonInvalidSelector, Err: err}
	}
	return sel, nil
}

// compileRules compiles one list. seen maps each key already set by the
// policy to the rule that sets it: a key set twice, or set and also
// declared externally managed, is a contradiction to fix, not to resolve.
func compileRules(env *cel.Env, list string, rules []v1alpha1.TagRule, external map[string]bool, seen map[string]string) ([]rule, error) {
	out := make([]rule, 0, len(rules))
	if len(rules) > v1alpha1.MaxTagPolicyRules {
		return nil, &RuleError{Rule: list, Reason: v1alpha1.TagPolicyReasonInvalidTag,
			Err: fmt.Errorf("%d rules; at most %d: an ENI holds at most 50 tags", len(rules), v1alpha1.MaxTagPolicyRules)}
	}
	for i, r := range rules {
		c, err := compileRule(env, fmt.Sprintf("%s[%d] (key %s)", list, i, bounded.Quoted(r.Key)), r)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[r.Key]; dup {
			return nil, &RuleError{Rule: c.where, Reason: v1alpha1.TagPolicyReasonConflictingRules,
				Err: fmt.Errorf("%s sets the key too: keep one of them", other)}
		}
		if external[r.Key] {
			return nil, &RuleError{Rule: c.where, Reason: v1alpha1.TagPolicyReasonConflictingRules,
				Err: errors.New("the key is in externallyManagedKeys too, so the operator would never write it: remove one of them")}
		}
		seen[r.Key] = c.where
		out = append(out, c)
	}
	return out, nil
}

func compileRule(env *cel.Env, where string, r v1alpha1.TagRule) (rule, error) {
	c := rule{key: r.Key, where: where}
	if err := checkKey(where, r.Key); err != nil {
		return c, err
	}
	switch {
	case r.Value != nil && r.Expression != "":
		return c, &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidTag, Err: errors.New("both value and expression are set: keep one")}
	case r.Value != nil:
		c.value = string(*r.Value)
		if err := checkValue(c.value); err != nil {
			return c, &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidTag, Err: err}
		}
	case r.Expression == "":
		return c, &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidTag, Err: errors.New("neither value nor expression is set: give one")}
	case len(r.Expression) > MaxExpressionLength:
		return c, &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidExpression,
			Err: fmt.Errorf("the expression is %d bytes; at most %d: shorten it", len(r.Expression), MaxExpressionLength)}
	default:
		prg, err := compileExpression(env, r.Expression)
		if err != nil {
			return c, &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidExpression, Err: err}
		}
		c.prg = prg
	}
	return c, nil
}

// checkKey holds a policy's key to what the tagger holds an annotation's
// to: the character rule, AWS's length, and no reserved prefix.
func checkKey(where, key string) error {
	if err := tagkeys.CheckKey(key); err != nil {
		return &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidTag, Err: err}
	}
	if n := utf8.RuneCountInString(key); n > MaxKeyLength {
		return &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonInvalidTag,
			Err: fmt.Errorf("the key is %d characters; at most %d: shorten it", n, MaxKeyLength)}
	}
	if r, ok := tagkeys.ReservedBy(key); ok {
		return &RuleError{Rule: where, Reason: v1alpha1.TagPolicyReasonReservedKey,
			Err: fmt.Errorf("keys starting with %s are reserved (%s acts on them): choose another key", r.Prefix, r.Owner)}
	}
	return nil
}

// checkValue holds a value, fixed or computed, to the character rule and
// AWS's length.
func checkValue(v string) error {
	if err := tagkeys.CheckValue(v); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(v); n > MaxValueLength {
		return fmt.Errorf("the value is %d characters; at most %d", n, MaxValueLength)
	}
	return nil
}

// Matches reports whether the policy selects a pod with these labels in
// a namespace with these labels. A policy of NodeENI interfaces selects
// no pod.
func Matches(p *Policy, namespaceLabels, podLabels map[string]string) bool {
	return p.nodes == nil && p.namespaces.Matches(labels.Set(namespaceLabels)) && p.pods.Matches(labels.Set(podLabels))
}

// MatchesNode reports whether the policy selects a node with these
// labels (for its NodeENI interfaces).
func MatchesNode(p *Policy, nodeLabels map[string]string) bool {
	return p.nodes != nil && p.nodes.Matches(labels.Set(nodeLabels))
}

// ForNodes tells whether the policy tags NodeENI interfaces, not pods.
func (p *Policy) ForNodes() bool { return p.nodes != nil }

// Selectors are the policy's namespace and pod selectors, for listing
// the pods it selects.
func (p *Policy) Selectors() (namespaces, pods labels.Selector) { return p.namespaces, p.pods }
