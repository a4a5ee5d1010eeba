package tagpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// inputs is a pod of Deployment checkout in namespace shop (label
// cost-center=1234) on a node in eu-west-1a.
func inputs() Inputs {
	return Inputs{
		Pod: Pod{Name: "checkout-7d9f-abcde", Namespace: "shop", Labels: map[string]string{"app": "checkout", "team": "payments"},
			ServiceAccountName: "checkout", NodeName: "ip-10-0-1-2"},
		Namespace: Namespace{Name: "shop", Labels: map[string]string{"cost-center": "1234", "tier": "prod"}},
		Owner:     Owner{Kind: "Deployment", Name: "checkout"},
		Node:      Node{Name: "ip-10-0-1-2", Labels: map[string]string{"pool": "general"}, Zone: "eu-west-1a", InstanceType: "m7i.large"},
	}
}

type spec = v1alpha1.ENITagPolicySpec

func prio(n int32, s spec) spec { s.Priority = n; return s }

func annotation(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name       string
		policies   map[string]spec
		annotation map[string]string
		want       map[string]string // Tags
		origins    map[string]string // key -> policy/rule, "" for the annotation; only the keys listed are checked
		policyConf []PolicyConflict
		annotConf  []AnnotationConflict
		extConf    []ExternalConflict
		external   []string
		matched    []string
	}{
		{name: "no policy: the annotation as is", annotation: annotation("Team", "dev"),
			want: annotation("Team", "dev"), origins: map[string]string{"Team": ""}},
		{name: "a default fills a key the annotation lacks",
			policies:   map[string]spec{"base": {Defaults: rules(fixed("CostCenter", "1"), fixed("Team", "platform"))}},
			annotation: annotation("Team", "dev"),
			want:       annotation("CostCenter", "1", "Team", "dev"),
			origins:    map[string]string{"CostCenter": `base defaults[0] (key "CostCenter")`, "Team": ""}, matched: []string{"base"}},
		{name: "enforced overrides the annotation, reported",
			policies:   map[string]spec{"cost": {Enforced: rules(fixed("CostCenter", "1234"))}},
			annotation: annotation("CostCenter", "9999", "Team", "dev"),
			want:       annotation("CostCenter", "1234", "Team", "dev"),
			origins:    map[string]string{"CostCenter": `cost enforced[0] (key "CostCenter")`},
			annotConf:  []AnnotationConflict{{Policy: "cost", Key: "CostCenter", Annotation: "9999", Enforced: "1234"}}, matched: []string{"cost"}},
		{name: "enforced equal to the annotation: no conflict",
			policies:   map[string]spec{"cost": {Enforced: rules(fixed("CostCenter", "1234"))}},
			annotation: annotation("CostCenter", "1234"), want: annotation("CostCenter", "1234"), matched: []string{"cost"}},
		{name: "the higher priority wins a key, without conflict",
			policies: map[string]spec{"a-low": prio(1, spec{Defaults: rules(fixed("Team", "low"))}),
				"z-high": prio(10, spec{Defaults: rules(fixed("Team", "high"))})},
			want: annotation("Team", "high"), origins: map[string]string{"Team": `z-high defaults[0] (key "Team")`},
			matched: []string{"z-high", "a-low"}},
		{name: "equal priority: the first name wins, conflict reported",
			policies: map[string]spec{"beta": prio(5, spec{Enforced: rules(fixed("Team", "b"))}),
				"alpha": prio(5, spec{Enforced: rules(fixed("Team", "a"))}),
				"gamma": prio(5, spec{Enforced: rules(fixed("Team", "a"))}),
				"low":   prio(1, spec{Enforced: rules(fixed("Team", "c"))})},
			want: annotation("Team", "a"), origins: map[string]string{"Team": `alpha enforced[0] (key "Team")`},
			policyConf: []PolicyConflict{{Key: "Team", Winner: "alpha", Loser: "beta", WinnerValue: "a", LoserValue: "b"}},
			matched:    []string{"alpha", "beta", "gamma", "low"}},
		{name: "equal priority, equal values: no conflict",
			policies: map[string]spec{"a": {Defaults: rules(fixed("Team", "x"))}, "b": {Defaults: rules(fixed("Team", "x"))}},
			want:     annotation("Team", "x"), matched: []string{"a", "b"}},
		{name: "enforced beats a default of a higher priority",
			policies: map[string]spec{"high": prio(100, spec{Defaults: rules(fixed("Team", "default"))}),
				"low": prio(-5, spec{Enforced: rules(fixed("Team", "enforced"))})},
			want: annotation("Team", "enforced"), origins: map[string]string{"Team": `low enforced[0] (key "Team")`},
			matched: []string{"high", "low"}},
		{name: "externally managed keys are left out, whoever sets them",
			policies: map[string]spec{"ext": {ExternallyManagedKeys: []string{"Owner", "Billing"}},
				"other": {Defaults: rules(fixed("Owner", "x")), Enforced: rules(fixed("Billing", "y"), fixed("Team", "net"))}},
			annotation: annotation("Owner", "me", "Billing", "z", "App", "shop"),
			want:       annotation("App", "shop", "Team", "net"), external: []string{"Billing", "Owner"}, matched: []string{"ext", "other"},
			extConf: []ExternalConflict{{Key: "Billing", Enforcer: "other", External: "ext"}}},
		{name: "a key enforced by a higher priority than the policy leaving it to other tools: enforced, reported",
			policies: map[string]spec{"low-ext": prio(1, spec{ExternallyManagedKeys: []string{"CostCenter"}}),
				"high-enf": prio(10, spec{Enforced: rules(fixed("CostCenter", "1234"))})},
			want: annotation("CostCenter", "1234"), matched: []string{"high-enf", "low-ext"},
			extConf: []ExternalConflict{{Key: "CostCenter", Enforcer: "high-enf", External: "low-ext", EnforcerWins: true}}},
		{name: "a key left to other tools by a higher priority than its enforcer: left, reported",
			policies: map[string]spec{"high-ext": prio(10, spec{ExternallyManagedKeys: []string{"CostCenter"}}),
				"low-enf": prio(1, spec{Enforced: rules(fixed("CostCenter", "1234"))})},
			want: map[string]string{}, external: []string{"CostCenter"}, matched: []string{"high-ext", "low-enf"},
			extConf: []ExternalConflict{{Key: "CostCenter", Enforcer: "low-enf", External: "high-ext"}}},
		{name: "policies that do not select the pod are ignored",
			policies: map[string]spec{
				"other-ns":  {NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dev"}}, Enforced: rules(fixed("A", "1"))},
				"other-pod": {PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}, Enforced: rules(fixed("B", "2"))},
				"this":      {NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}}, Enforced: rules(fixed("C", "3"))},
			},
			want: annotation("C", "3"), matched: []string{"this"}},
		{name: "expressions read the pod, its namespace, owner and node",
			policies: map[string]spec{"meta": {Enforced: rules(
				expr("CostCenter", "namespaceObject.labels['cost-center']"),
				expr("Workload", "owner.kind + '/' + owner.name"),
				expr("Where", "node.zone + ' ' + node.instanceType + ' ' + node.labels['pool']"),
				expr("Who", "pod.namespace + ':' + pod.serviceAccountName + '@' + pod.nodeName"),
				expr("Team", "'team' in pod.labels ? pod.labels['team'] : 'unknown'"),
				expr("Upper", "pod.labels['app'].upperAscii()"),
			)}},
			want: annotation("CostCenter", "1234", "Workload", "Deployment/checkout", "Where", "eu-west-1a m7i.large general",
				"Who", "shop:checkout@ip-10-0-1-2", "Team", "payments", "Upper", "CHECKOUT"), matched: []string{"meta"}},
		{name: "a default the annotation overrides is not evaluated",
			policies:   map[string]spec{"p": {Defaults: rules(expr("Owner", "pod.labels['owner']"))}},
			annotation: annotation("Owner", "me"), want: annotation("Owner", "me"), matched: []string{"p"}},
		{name: "a rule of lower priority than the key's winner is not evaluated",
			policies: map[string]spec{"high": prio(2, spec{Enforced: rules(fixed("Owner", "x"))}),
				"low": prio(1, spec{Enforced: rules(expr("Owner", "pod.labels['owner']"))})},
			want: annotation("Owner", "x"), matched: []string{"high", "low"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Evaluate(compileAll(t, c.policies), inputs(), c.annotation)
			if got.Refused != nil {
				t.Fatalf("refused: %v", got.Refused)
			}
			if !maps.Equal(got.Tags, c.want) {
				t.Errorf("tags %v; want %v", got.Tags, c.want)
			}
			for k, want := range c.origins {
				o := got.Origins[k]
				if s := strings.TrimSpace(o.Policy + " " + o.Rule); s != want {
					t.Errorf("origin of %s: %q; want %q", k, s, want)
				}
			}
			if len(got.Origins) != len(got.Tags) {
				t.Errorf("origins %v for tags %v", got.Origins, got.Tags)
			}
			check(t, "policy conflicts", got.PolicyConflicts, c.policyConf)
			check(t, "annotation conflicts", got.AnnotationConflicts, c.annotConf)
			check(t, "externally managed conflicts", got.ExternalConflicts, c.extConf)
			check(t, "externally managed", got.ExternallyManaged, c.external)
			check(t, "matched", got.Matched, c.matched)
		})
	}
}

func check[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s %v; want %v", what, got, want)
	}
}

// compileAll compiles the policies in a random order (map iteration):
// the result must not depend on it.
func compileAll(t *testing.T, specs map[string]spec) []*Policy {
	t.Helper()
	var out []*Policy
	for name, s := range specs {
		out = append(out, mustCompile(t, name, s))
	}
	return out
}

// The outcome of conflicting policies is the same whatever order the
// caller lists them in.
func TestEvaluateIsDeterministic(t *testing.T) {
	var ps []*Policy
	for i := range 8 {
		ps = append(ps, mustCompile(t, fmt.Sprintf("p%d", i), spec{Enforced: rules(fixed("Team", fmt.Sprint(i)))}))
	}
	want := Evaluate(ps, inputs(), nil)
	for range 20 {
		slices.Reverse(ps)
		ps[0], ps[len(ps)/2] = ps[len(ps)/2], ps[0]
		got := Evaluate(ps, inputs(), nil)
		if !maps.Equal(got.Tags, want.Tags) || !slices.Equal(got.PolicyConflicts, want.PolicyConflicts) {
			t.Fatalf("%v %v; want %v %v", got.Tags, got.PolicyConflicts, want.Tags, want.PolicyConflicts)
		}
	}
	if want.Tags["Team"] != "0" || len(want.PolicyConflicts) != 7 {
		t.Fatalf("tags %v conflicts %v; want p0's value and 7 conflicts", want.Tags, want.PolicyConflicts)
	}
}

// An expression that fails for a pod refuses the pod, naming the policy
// and the rule, and says what to do.
func TestEvaluateRefuses(t *testing.T) {
	manyLabels := map[string]string{}
	for i := range 300 {
		manyLabels[fmt.Sprintf("label-%03d", i)] = "v"
	}
	cases := []struct {
		name   string
		spec   spec
		mutate func(*Inputs)
		want   []string
	}{
		{"a missing label", spec{Enforced: rules(fixed("A", "1"), expr("Owner", "pod.labels['owner']"))}, nil,
			[]string{`policy "p" enforced[1] (key "Owner")`, "no such key: owner", "guard what may be missing"}},
		{"a missing namespace label", spec{Defaults: rules(expr("CostCenter", "namespaceObject.labels['cc']"))}, nil,
			[]string{`policy "p" defaults[0] (key "CostCenter")`, "no such key: cc"}},
		{"the cost limit", spec{Enforced: rules(expr("Count", "string(pod.labels.filter(k, pod.labels.exists(j, j + k == k + j)).size())"))},
			func(in *Inputs) { in.Pod.Labels = manyLabels },
			[]string{`policy "p" enforced[0] (key "Count")`, "exceeded its cost limit (10000)"}},
		{"a value with a control character", spec{Enforced: rules(expr("Note", "pod.labels['note']"))},
			func(in *Inputs) { in.Pod.Labels["note"] = "a\x00kubernetes.io/cluster/x" },
			[]string{`policy "p" enforced[0] (key "Note")`, "not a valid tag value", "control character"}},
		{"a value too long", spec{Enforced: rules(expr("Note", "pod.labels['note'] + pod.labels['note']"))},
			func(in *Inputs) { in.Pod.Labels["note"] = strings.Repeat("n", 129) },
			[]string{`policy "p" enforced[0] (key "Note")`, "at most 256"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := inputs()
			if c.mutate != nil {
				c.mutate(&in)
			}
			got := Evaluate([]*Policy{mustCompile(t, "p", c.spec)}, in, annotation("Team", "dev"))
			if got.Refused == nil || got.Tags != nil {
				t.Fatalf("tags %v, refused %v; want a refusal and no tags", got.Tags, got.Refused)
			}
			for _, w := range c.want {
				if !strings.Contains(got.Refused.Error(), w) {
					t.Errorf("refusal %q; want it to mention %q", got.Refused, w)
				}
			}
		})
	}
}

// A cheap expression over the same large map stays within the limit: the
// limit stops work, not ordinary expressions.
func TestCostLimitLeavesOrdinaryExpressions(t *testing.T) {
	in := inputs()
	for i := range 300 {
		in.Pod.Labels[fmt.Sprintf("label-%03d", i)] = "v"
	}
	p := mustCompile(t, "p", spec{Enforced: rules(expr("Team", "pod.labels.exists(k, k == 'team') ? pod.labels['team'] : 'none'"))})
	if got := Evaluate([]*Policy{p}, in, nil); got.Refused != nil || got.Tags["Team"] != "payments" {
		t.Fatalf("%v %v", got.Tags, got.Refused)
	}
}

func TestMatches(t *testing.T) {
	sel := func(ml map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: ml, MatchExpressions: exprs}
	}
	nsLabels := map[string]string{"team": "payments", "tier": "prod"}
	podLabels := map[string]string{"app": "checkout"}
	cases := []struct {
		name    string
		ns, pod *metav1.LabelSelector
		want    bool
	}{
		{"no selectors: every pod", nil, nil, true},
		{"empty selectors: every pod", sel(nil), sel(nil), true},
		{"namespace labels match", sel(map[string]string{"team": "payments"}), nil, true},
		{"namespace labels differ", sel(map[string]string{"team": "search"}), nil, false},
		{"pod labels match", nil, sel(map[string]string{"app": "checkout"}), true},
		{"pod labels differ", nil, sel(map[string]string{"app": "cart"}), false},
		{"both match", sel(map[string]string{"tier": "prod"}), sel(map[string]string{"app": "checkout"}), true},
		{"namespace matches, pod does not", sel(map[string]string{"tier": "prod"}), sel(map[string]string{"app": "cart"}), false},
		{"NotIn", sel(nil, metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}), nil, true},
		{"DoesNotExist on a present label", nil, sel(nil, metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}), false},
		{"Exists on the pod's label, not the namespace's", nil, sel(nil, metav1.LabelSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpExists}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustCompile(t, "p", spec{NamespaceSelector: c.ns, PodSelector: c.pod})
			if got := Matches(p, nsLabels, podLabels); got != c.want {
				t.Fatalf("Matches = %v; want %v", got, c.want)
			}
		})
	}
}

func TestTooMany(t *testing.T) {
	result := func(annotated, defaults, enforced int) Result {
		r := Result{Tags: map[string]string{}, Origins: map[string]Origin{}}
		add := func(prefix string, n int, o Origin) {
			for i := range n {
				k := fmt.Sprintf("%s%02d", prefix, i)
				r.Tags[k], r.Origins[k] = "v", o
			}
		}
		add("a", annotated, Origin{})
		add("d", defaults, Origin{Policy: "base", Rule: "defaults[0]"})
		add("e", enforced, Origin{Policy: "cost", Rule: "enforced[0]", Enforced: true})
		return r
	}
	if err := TooMany(result(20, 20, 9), 1); err != nil {
		t.Fatalf("50 tags refused: %v", err)
	}
	cases := []struct {
		name string
		r    Result
		own  int
		want []string
	}{
		{"one too many: an annotation key", result(20, 20, 10), 1,
			[]string{"51 tags: 20 from the annotation, 30 from policies and 1 of the operator's own", "at most 50: drop 1, e.g. \"a00\" (annotation)"}},
		{"the annotation's keys first, then defaults", result(2, 30, 20), 1,
			[]string{"drop 3", `"a00" (annotation), "a01" (annotation), "d00" (default of policy "base")`}},
		{"then enforced", result(0, 1, 50), 1,
			[]string{"drop 2", `"d00" (default of policy "base"), "e00" (enforced by policy "cost")`}},
		{"many to drop: the list is cut", result(40, 40, 0), 1,
			[]string{"drop 31", "and 26 more"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := TooMany(c.r, c.own)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q; want it to mention %q", err, w)
				}
			}
		})
	}
}

// A compiled policy is shared by the tagger's workers.
func TestEvaluateConcurrently(t *testing.T) {
	p := mustCompile(t, "p", spec{Enforced: rules(expr("Team", "pod.labels['team'] + '-' + node.zone"))})
	done := make(chan string)
	for range 8 {
		go func() {
			var last string
			for range 200 {
				last = Evaluate([]*Policy{p}, inputs(), nil).Tags["Team"]
			}
			done <- last
		}()
	}
	for range 8 {
		if got := <-done; got != "payments-eu-west-1a" {
			t.Fatalf("Team = %q", got)
		}
	}
}

// A policy whose rule does not compile refuses the pods it selects, so a
// typo leaves their ENIs as they are; one whose selector is malformed
// selects nothing.
func TestBrokenPolicyRefusesWhatItSelects(t *testing.T) {
	c := compiler(t)
	broken, err := c.Compile("cost", spec{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}},
		Enforced: rules(expr("CostCenter", "namespaceObject.labels['cc'"))})
	if err == nil || broken == nil || broken.Broken() == nil {
		t.Fatalf("Compile = %v, %v; want the policy, marked broken, and the error", broken, err)
	}
	got := Evaluate([]*Policy{broken, mustCompile(t, "team", spec{Defaults: rules(fixed("Team", "x"))})}, inputs(), annotation("A", "1"))
	if got.Refused == nil || got.Tags != nil || !strings.Contains(got.Refused.Error(), `policy "cost" does not compile`) ||
		!strings.Contains(got.Refused.Error(), `enforced[0] (key "CostCenter")`) {
		t.Errorf("selected pod: tags %v, refused %v; want a refusal naming the policy and the rule", got.Tags, got.Refused)
	}
	other := inputs()
	other.Pod.Labels = map[string]string{"app": "search"}
	if got := Evaluate([]*Policy{broken}, other, annotation("A", "1")); got.Refused != nil || got.Tags["A"] != "1" {
		t.Errorf("pod it does not select: tags %v, refused %v; want the annotation's", got.Tags, got.Refused)
	}
	if p, err := c.Compile("bad", spec{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}}); p != nil || err == nil {
		t.Errorf("malformed selector: Compile = %v, %v; want no policy and an error", p, err)
	}
}

// The --default-tags policy selects every pod, overrides the annotation
// and yields to every ENITagPolicy's enforced tags.
func TestConstantPolicy(t *testing.T) {
	c := compiler(t)
	flag, err := c.Constant("--default-tags", map[string]string{"Cluster": "prod", "Team": "platform"})
	if err != nil {
		t.Fatal(err)
	}
	ns := mustCompile(t, "payments", spec{Enforced: rules(fixed("Cluster", "payments-prod"))})
	got := Evaluate([]*Policy{flag, ns}, inputs(), annotation("Team", "dev"))
	want := annotation("Cluster", "payments-prod", "Team", "platform")
	if !maps.Equal(got.Tags, want) {
		t.Errorf("tags %v; want %v", got.Tags, want)
	}
	if o := got.Origins["Team"]; o.Policy != "--default-tags" || !o.Enforced {
		t.Errorf("Team's origin %+v; want the flag, enforced", o)
	}
	if len(got.AnnotationConflicts) != 1 || got.AnnotationConflicts[0].Key != "Team" {
		t.Errorf("annotation conflicts %+v; want Team's", got.AnnotationConflicts)
	}
	if _, err := c.Constant("--default-tags", map[string]string{"kubernetes.io/cluster/x": "owned"}); err == nil {
		t.Error("a reserved key in --default-tags compiled")
	}
}

// A policy with a nodeSelector tags the NodeENI interfaces of the nodes
// it selects, by the same precedence with spec.tags for the annotation,
// and selects no pod; one that mixes both kinds of selector is refused.
func TestNodePolicies(t *testing.T) {
	c := compiler(t)
	zone := mustCompile(t, "zone", spec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "general"}},
		Enforced: rules(expr("Zone", "node.zone")), Defaults: rules(fixed("Team", "platform"), expr("Type", "node.instanceType"))})
	pods := mustCompile(t, "pods", spec{Enforced: rules(fixed("CostCenter", "1"))})
	in := inputs()
	got := EvaluateNode([]*Policy{zone, pods}, in, annotation("Team", "net", "Zone", "elsewhere"))
	want := annotation("Zone", "eu-west-1a", "Team", "net", "Type", "m7i.large")
	if !maps.Equal(got.Tags, want) || len(got.AnnotationConflicts) != 1 {
		t.Errorf("node tags %v (conflicts %+v); want %v and Zone's conflict", got.Tags, got.AnnotationConflicts, want)
	}
	if r := Evaluate([]*Policy{zone}, in, annotation("A", "1")); len(r.Matched) != 0 || !maps.Equal(r.Tags, annotation("A", "1")) {
		t.Errorf("a node policy applied to a pod: %+v", r)
	}
	in.Node.Labels = map[string]string{"pool": "gpu"}
	if r := EvaluateNode([]*Policy{zone}, in, nil); len(r.Matched) != 0 || len(r.Tags) != 0 {
		t.Errorf("a node the selector does not select got %v", r.Tags)
	}
	if _, err := c.Compile("mixed", spec{NodeSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}); err == nil ||
		!strings.Contains(err.Error(), "either pods") {
		t.Errorf("mixed selectors: %v; want a refusal", err)
	}
}
