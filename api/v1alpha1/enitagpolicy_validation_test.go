package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

var policyGVR = schema.GroupVersionResource{Group: "networking.k8s.aws", Version: "v1alpha1", Resource: "enitagpolicies"}

func createPolicy(t *testing.T, name string, spec map[string]any) error {
	t.Helper()
	dc, err := dynamic.NewForConfig(shared.Env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	res := dc.Resource(policyGVR)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.aws/v1alpha1", "kind": "ENITagPolicy",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	_, err = res.Create(context.Background(), u, metav1.CreateOptions{})
	if err == nil {
		_ = res.Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	return err
}

func tagRules(n int, rule func(i int) map[string]any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = rule(i)
	}
	return out
}

func keyList(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("Key%d", i)
	}
	return out
}

func fixedRule(i int) map[string]any {
	return map[string]any{"key": fmt.Sprintf("Key%d", i), "value": "v"}
}

// A rule has exactly one of value and expression, a list at most 50
// rules with distinct keys, and no key a reserved prefix: the API server
// refuses the rest with a message that says what is wrong.
func TestAdmissionRefusesInvalidTagPolicies(t *testing.T) {
	one := func(r map[string]any) []any { return []any{r} }
	cases := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"both value and expression", map[string]any{"enforced": one(map[string]any{"key": "Team", "value": "a", "expression": "'b'"})}, "set exactly one of value and expression"},
		{"neither value nor expression", map[string]any{"defaults": one(map[string]any{"key": "Team"})}, "set exactly one of value and expression"},
		{"51 defaults", map[string]any{"defaults": tagRules(51, fixedRule)}, "spec.defaults: Too many"},
		{"51 enforced", map[string]any{"enforced": tagRules(51, fixedRule)}, "spec.enforced: Too many"},
		{"51 externally managed keys", map[string]any{"externallyManagedKeys": keyList(51)}, "spec.externallyManagedKeys: Too many"},
		{"a key twice", map[string]any{"defaults": []any{fixedRule(1), fixedRule(1)}}, "Duplicate value"},
		{"an externally managed key twice", map[string]any{"externallyManagedKeys": []any{"Owner", "Owner"}}, "Duplicate value"},
		{"no key", map[string]any{"defaults": one(map[string]any{"value": "v"})}, "spec.defaults[0].key: Required"},
		{"a reserved key", map[string]any{"enforced": one(map[string]any{"key": "AWS:Foo", "value": "v"})}, "reserved prefix"},
		{"the tagger's own key", map[string]any{"defaults": one(map[string]any{"key": "eni-tagger.io/hash", "value": "v"})}, "reserved prefix"},
		{"a key with a control character", map[string]any{"defaults": one(map[string]any{"key": "a\x00b", "value": "v"})}, "control characters"},
		{"a key ending with white space", map[string]any{"defaults": one(map[string]any{"key": "Team ", "value": "v"})}, "white space"},
		{"a key too long", map[string]any{"defaults": one(map[string]any{"key": strings.Repeat("k", 128), "value": "v"})}, "spec.defaults[0].key: Too long"},
		{"a value too long", map[string]any{"defaults": one(map[string]any{"key": "Team", "value": strings.Repeat("v", 257)})}, "spec.defaults[0].value: Too long"},
		{"a value with a newline", map[string]any{"defaults": one(map[string]any{"key": "Team", "value": "a\nb"})}, "control characters"},
		{"an expression too long", map[string]any{"enforced": one(map[string]any{"key": "Team", "expression": strings.Repeat("x", 1025)})}, "spec.enforced[0].expression: Too long"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := createPolicy(t, fmt.Sprintf("invalid-%d", i), c.spec)
			if err == nil {
				t.Fatalf("accepted; want a refusal mentioning %q", c.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refusal %v; want Invalid mentioning %q", err, c.want)
			}
		})
	}
}

func TestAdmissionAcceptsValidTagPolicies(t *testing.T) {
	cases := map[string]map[string]any{
		"empty": {},
		"everything": {
			"priority":              int64(10),
			"namespaceSelector":     map[string]any{"matchLabels": map[string]any{"team": "payments"}},
			"podSelector":           map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Exists"}}},
			"defaults":              []any{map[string]any{"key": "Team", "value": "platform"}, map[string]any{"key": "Empty", "value": ""}},
			"enforced":              []any{map[string]any{"key": "CostCenter", "expression": "namespaceObject.labels['cost-center']"}},
			"externallyManagedKeys": keyList(50),
		},
		"50 rules of each kind, at the length limits": {
			"defaults": tagRules(50, func(i int) map[string]any {
				return map[string]any{"key": fmt.Sprintf("%03d", i) + strings.Repeat("k", 124), "value": strings.Repeat("v", 256)}
			}),
			"enforced": tagRules(50, func(i int) map[string]any {
				return map[string]any{"key": fmt.Sprintf("E%d", i), "expression": strings.Repeat("x", 1024)}
			}),
		},
		"negative priority": {"priority": int64(-3)},
	}
	i := 0
	for name, spec := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			if err := createPolicy(t, fmt.Sprintf("valid-%d", i), spec); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// kubectl get enitagpolicies shows the priority, the pod counts, Ready
// and the age.
func TestTagPolicyPrinterColumns(t *testing.T) {
	c := typedClient(t)
	ctx := context.Background()
	p := &v1alpha1.ENITagPolicy{ObjectMeta: metav1.ObjectMeta{Name: "columns"}, Spec: v1alpha1.ENITagPolicySpec{Priority: 7}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, p) })
	p.Status.MatchedPods, p.Status.TaggedPods, p.Status.RefusedPods = 10, 8, 2
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.TagPolicyReasonValid, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	table := testenv.Table(t, shared.Env(t).Config, "/apis/networking.k8s.aws/v1alpha1/enitagpolicies/columns")
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Priority,Matched,Tagged,Refused,Ready,Age" {
		t.Fatalf("columns %s", got)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[:6]) != "[columns 7 10 8 2 True]" {
		t.Fatalf("rows %v; want name, priority 7, 10 matched, 8 tagged, 2 refused, Ready True", table.Rows)
	}
}
