package tagpolicy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

func val(s string) *v1alpha1.TagValue {
	v := v1alpha1.TagValue(s)
	return &v
}

func fixed(k, v string) v1alpha1.TagRule             { return v1alpha1.TagRule{Key: k, Value: val(v)} }
func expr(k, e string) v1alpha1.TagRule              { return v1alpha1.TagRule{Key: k, Expression: e} }
func rules(r ...v1alpha1.TagRule) []v1alpha1.TagRule { return r }

func compiler(t *testing.T) *Compiler {
	t.Helper()
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCompile(t *testing.T, name string, spec v1alpha1.ENITagPolicySpec) *Policy {
	t.Helper()
	p, err := compiler(t).Compile(name, spec)
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return p
}

func TestCompileAcceptsValidPolicies(t *testing.T) {
	cases := map[string]v1alpha1.ENITagPolicySpec{
		"empty":        {},
		"fixed values": {Defaults: rules(fixed("Team", "net"), fixed("Empty", "")), Enforced: rules(fixed("CostCenter", "1234"))},
		"every variable": {Enforced: rules(
			expr("Pod", "pod.name + '/' + pod.namespace + '/' + pod.serviceAccountName + '/' + pod.nodeName"),
			expr("Labels", "'app' in pod.labels ? pod.labels['app'] : pod.serviceAccountName"),
			expr("CostCenter", "namespaceObject.labels['cost-center']"),
			expr("Namespace", "namespaceObject.name"),
			expr("Owner", "owner.kind + '/' + owner.name"),
			expr("Node", "node.name + node.zone + node.instanceType + node.labels['pool']"),
		)},
		"string extensions":              {Defaults: rules(expr("Team", "pod.namespace.upperAscii().replace('-', '_')"))},
		"expression at the length limit": {Defaults: rules(expr("Long", "'"+strings.Repeat("a", MaxExpressionLength-2)+"'"))},
		"50 rules of each kind":          {Defaults: manyRules("d", 50), Enforced: manyRules("e", 50), ExternallyManagedKeys: manyKeys("x", 50)},
		"selectors": {
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}},
			PodSelector:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
		},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) { mustCompile(t, "p", spec) })
	}
}

func manyRules(prefix string, n int) []v1alpha1.TagRule {
	out := make([]v1alpha1.TagRule, n)
	for i := range out {
		out[i] = fixed(fmt.Sprintf("%s%d", prefix, i), "v")
	}
	return out
}

func manyKeys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// Every refusal names the rule at fault, gives the Ready condition's
// reason and says what to fix.
func TestCompileRefusesNamingTheRule(t *testing.T) {
	cases := []struct {
		name   string
		spec   v1alpha1.ENITagPolicySpec
		rule   string // RuleError.Rule
		reason string
		want   string // in the message
	}{
		{"reserved key in defaults", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed("aws:cloudformation:stack", "x"))},
			`defaults[0] (key "aws:cloudformation:stack")`, v1alpha1.TagPolicyReasonReservedKey, "reserved"},
		{"reserved key in enforced, third rule", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("A", "1"), fixed("B", "2"), fixed("Kubernetes.io/cluster/prod", "owned"))},
			`enforced[2] (key "Kubernetes.io/cluster/prod")`, v1alpha1.TagPolicyReasonReservedKey, "kubernetes.io/"},
		{"the operator's own key", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("eni-tagger.io/hash", "x"))},
			`enforced[0] (key "eni-tagger.io/hash")`, v1alpha1.TagPolicyReasonReservedKey, "eni-tagger.io/"},
		{"the NodeENI controller's key", v1alpha1.ENITagPolicySpec{Defaults: rules(expr("ENI-Operator.io/proof", "'x'"))},
			`defaults[0] (key "ENI-Operator.io/proof")`, v1alpha1.TagPolicyReasonReservedKey, "eni-operator.io/"},
		{"reserved externally managed key", v1alpha1.ENITagPolicySpec{ExternallyManagedKeys: []string{"ok", "karpenter.sh/nodepool"}},
			`externallyManagedKeys[1] (key "karpenter.sh/nodepool")`, v1alpha1.TagPolicyReasonReservedKey, "Karpenter"},
		{"syntax error", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("A", "1"), expr("Team", "pod.labels['team'"))},
			`enforced[1] (key "Team")`, v1alpha1.TagPolicyReasonInvalidExpression, "Syntax error"},
		{"unknown field", v1alpha1.ENITagPolicySpec{Defaults: rules(expr("Team", "pod.team"))},
			`defaults[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidExpression, "undefined field 'team'"},
		{"unknown variable", v1alpha1.ENITagPolicySpec{Defaults: rules(expr("Team", "deployment.name"))},
			`defaults[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidExpression, "undeclared reference to 'deployment'"},
		{"namespace, a word CEL reserves", v1alpha1.ENITagPolicySpec{Defaults: rules(expr("CostCenter", "namespace.labels['cc']"))},
			`defaults[0] (key "CostCenter")`, v1alpha1.TagPolicyReasonInvalidExpression, "the namespace is namespaceObject"},
		{"an int, not a string", v1alpha1.ENITagPolicySpec{Enforced: rules(expr("Count", "size(pod.labels)"))},
			`enforced[0] (key "Count")`, v1alpha1.TagPolicyReasonInvalidExpression, "gives a int, not a string: convert it"},
		{"a bool, not a string", v1alpha1.ENITagPolicySpec{Enforced: rules(expr("HasApp", "'app' in pod.labels"))},
			`enforced[0] (key "HasApp")`, v1alpha1.TagPolicyReasonInvalidExpression, "gives a bool, not a string"},
		{"a map, not a string", v1alpha1.ENITagPolicySpec{Enforced: rules(expr("Labels", "pod.labels"))},
			`enforced[0] (key "Labels")`, v1alpha1.TagPolicyReasonInvalidExpression, "not a string"},
		{"dyn, not a string", v1alpha1.ENITagPolicySpec{Enforced: rules(expr("Dyn", "dyn(pod.name)"))},
			`enforced[0] (key "Dyn")`, v1alpha1.TagPolicyReasonInvalidExpression, "gives a dyn, not a string"},
		{"expression too long", v1alpha1.ENITagPolicySpec{Defaults: rules(expr("Long", "'"+strings.Repeat("a", MaxExpressionLength)+"'"))},
			`defaults[0] (key "Long")`, v1alpha1.TagPolicyReasonInvalidExpression, "at most 1024"},
		{"both value and expression", v1alpha1.ENITagPolicySpec{Defaults: rules(v1alpha1.TagRule{Key: "Team", Value: val("x"), Expression: "'y'"})},
			`defaults[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidTag, "both value and expression"},
		{"neither value nor expression", v1alpha1.ENITagPolicySpec{Enforced: rules(v1alpha1.TagRule{Key: "Team"})},
			`enforced[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidTag, "neither value nor expression"},
		{"control character in a key", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed("Te\x00am", "x"))},
			`defaults[0] (key "Te\x00am")`, v1alpha1.TagPolicyReasonInvalidTag, "control character"},
		{"white space ending a key", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed("Team ", "x"))},
			`defaults[0] (key "Team ")`, v1alpha1.TagPolicyReasonInvalidTag, "white space"},
		{"key too long", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed(strings.Repeat("k", 128), "x"))},
			"defaults[0] (key " + bounded.Quoted(strings.Repeat("k", 128)) + ")", v1alpha1.TagPolicyReasonInvalidTag, "at most 127"},
		{"value too long", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("Team", strings.Repeat("v", 257)))},
			`enforced[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidTag, "at most 256"},
		{"newline in a value", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("Team", "a\nb"))},
			`enforced[0] (key "Team")`, v1alpha1.TagPolicyReasonInvalidTag, "control character"},
		{"51 rules", v1alpha1.ENITagPolicySpec{Enforced: manyRules("e", 51)},
			"enforced", v1alpha1.TagPolicyReasonInvalidTag, "at most 50"},
		{"a key both default and enforced", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed("Team", "a")), Enforced: rules(fixed("Team", "b"))},
			`enforced[0] (key "Team")`, v1alpha1.TagPolicyReasonConflictingRules, `defaults[0] (key "Team") sets the key too`},
		{"a key twice in one list", v1alpha1.ENITagPolicySpec{Defaults: rules(fixed("Team", "a"), fixed("Team", "b"))},
			`defaults[1] (key "Team")`, v1alpha1.TagPolicyReasonConflictingRules, "keep one of them"},
		{"a key set and externally managed", v1alpha1.ENITagPolicySpec{Enforced: rules(fixed("Team", "a")), ExternallyManagedKeys: []string{"Team"}},
			`enforced[0] (key "Team")`, v1alpha1.TagPolicyReasonConflictingRules, "externallyManagedKeys too"},
		{"a malformed selector", v1alpha1.ENITagPolicySpec{PodSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}},
			"podSelector", v1alpha1.TagPolicyReasonInvalidSelector, "values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := compiler(t).Compile("cost", c.spec)
			if err == nil {
				t.Fatalf("compiled %+v; want a refusal", p)
			}
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RuleError", err)
			}
			if re.Rule != c.rule || re.Reason != c.reason {
				t.Errorf("rule %q reason %q; want %q %q", re.Rule, re.Reason, c.rule, c.reason)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.rule+": ") {
				t.Errorf("message %q; want it to start with the rule and mention %q", err, c.want)
			}
		})
	}
}
