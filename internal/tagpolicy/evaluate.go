package tagpolicy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Origin says where a key of a Result comes from.
type Origin struct {
	// Policy is the policy that set the key, "" for the pod's annotation.
	Policy string
	// Rule names the policy's rule: enforced[0] (key "Team").
	Rule string
	// Enforced is true for a key of a policy's enforced list.
	Enforced bool
}

// PolicyConflict is two policies of equal priority setting one key to
// different values. The winner's name sorts first; report it on both.
type PolicyConflict struct {
	Key                     string
	Winner, Loser           string
	WinnerValue, LoserValue string
}

// ExternalConflict is a key one matching policy enforces and another
// leaves to other tools (externallyManagedKeys). The enforcer wins when
// its priority is higher; otherwise the key is left to other tools.
// Report it on the pod and both policies.
type ExternalConflict struct {
	Key, Enforcer, External string
	EnforcerWins            bool
}

// AnnotationConflict is an enforced key overriding another value the
// pod's annotation asks for. Report it on the pod and the policy.
type AnnotationConflict struct {
	Policy, Key          string
	Annotation, Enforced string
}

// Result is the tags one pod's ENI should carry and what to report.
type Result struct {
	// Tags are the keys and values to write: the policies' and the
	// annotation's, without the externally managed keys. Nil when Refused.
	Tags map[string]string
	// Origins says, for each key of Tags, where it comes from.
	Origins map[string]Origin
	// Matched are the policies that select the pod, highest precedence
	// first.
	Matched []string
	// ExternallyManaged are the keys the matching policies leave to other
	// tools, sorted: the tagger neither writes nor removes them.
	ExternallyManaged []string
	// PolicyConflicts and AnnotationConflicts are sorted by key.
	PolicyConflicts     []PolicyConflict
	AnnotationConflicts []AnnotationConflict
	ExternalConflicts   []ExternalConflict
	// Refused is why the pod cannot be tagged: one error per rule whose
	// expression failed for it, each naming the policy and the rule.
	Refused error
}

// Evaluate gives the tags of a pod's ENI. annotation is what the pod
// asks for, as the tagger's own checks leave it (keys as written).
//
// Precedence: the defaults of every matching policy, then the annotation,
// then the enforced tags. Within defaults, and within enforced, the policy
// of higher priority, then of the alphabetically first name, wins a key;
// two of equal priority giving it different values conflict. The
// externally managed keys of every matching policy are left out, whoever
// sets them. Only the rules that can decide a key are evaluated: a
// default the annotation or an enforced tag overrides is not, nor a rule
// of lower priority than the key's winner.
func Evaluate(policies []*Policy, in Inputs, annotation map[string]string) Result {
	var matched []*Policy
	for _, p := range policies {
		if Matches(p, in.Namespace.Labels, in.Pod.Labels) {
			matched = append(matched, p)
		}
	}
	return evaluate(matched, in, annotation)
}

// EvaluateNode gives the tags of a node's NodeENI interfaces by the same
// rules, the NodeENI's spec.tags standing for the annotation: the
// policies that select the node (in.Node; the pod, namespace and owner
// are empty) and, for the flag's constants, none.
func EvaluateNode(policies []*Policy, in Inputs, specTags map[string]string) Result {
	var matched []*Policy
	for _, p := range policies {
		if MatchesNode(p, in.Node.Labels) {
			matched = append(matched, p)
		}
	}
	return evaluate(matched, in, specTags)
}

func evaluate(matched []*Policy, in Inputs, annotation map[string]string) Result {
	var r Result
	slices.SortFunc(matched, func(a, b *Policy) int {
		return cmp.Or(cmp.Compare(b.priority, a.priority), cmp.Compare(a.name, b.name))
	})
	for _, p := range matched {
		r.Matched = append(r.Matched, p.name)
	}
	external := externalKeys(matched, &r)
	r.ExternallyManaged = slices.Sorted(maps.Keys(external))
	e := &evaluation{vars: map[string]any{VarPod: in.Pod, VarNamespace: in.Namespace, VarOwner: in.Owner, VarNode: in.Node}}
	for _, p := range matched {
		if p.broken != nil {
			e.failures = append(e.failures, fmt.Errorf("policy %s does not compile (%w); the pod's tags are left as they are until it is fixed", bounded.Quoted(p.name), p.broken))
		}
	}
	enforced := e.layer(matched, true, func(k string) bool { return external[k] })
	defaults := e.layer(matched, false, func(k string) bool {
		_, asked := annotation[k]
		_, isEnforced := enforced[k]
		return external[k] || asked || isEnforced
	})
	r.PolicyConflicts = e.conflicts
	if len(e.failures) > 0 {
		r.Refused = errors.Join(e.failures...)
		return r
	}
	r.Tags, r.Origins = map[string]string{}, map[string]Origin{}
	for k, t := range defaults {
		r.Tags[k], r.Origins[k] = t.value, t.origin
	}
	for k, v := range annotation {
		if !external[k] {
			r.Tags[k], r.Origins[k] = v, Origin{}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(enforced)) {
		t := enforced[k]
		if v, asked := annotation[k]; asked && v != t.value {
			r.AnnotationConflicts = append(r.AnnotationConflicts, AnnotationConflict{Policy: t.origin.Policy, Key: k, Annotation: v, Enforced: t.value})
		}
		r.Tags[k], r.Origins[k] = t.value, t.origin
	}
	return r
}

// externalKeys returns the keys the matching policies (in precedence
// order) leave to other tools, less those a policy of higher priority
// enforces; each key both enforced and left is an ExternalConflict.
func externalKeys(matched []*Policy, r *Result) map[string]bool {
	leftBy, enforcedBy := map[string]*Policy{}, map[string]*Policy{}
	for _, p := range matched {
		for k := range p.externallyManagedKey {
			if leftBy[k] == nil {
				leftBy[k] = p
			}
		}
		for i := range p.enforced {
			if k := p.enforced[i].key; enforcedBy[k] == nil {
				enforcedBy[k] = p
			}
		}
	}
	out := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(leftBy)) {
		ext, enf := leftBy[k], enforcedBy[k]
		wins := enf != nil && enf.priority > ext.priority
		if enf != nil {
			r.ExternalConflicts = append(r.ExternalConflicts, ExternalConflict{Key: k, Enforcer: enf.name, External: ext.name, EnforcerWins: wins})
		}
		if !wins {
			out[k] = true
		}
	}
	return out
}

// evaluation is one pod's: its variables, and what the layers found.
type evaluation struct {
	vars      map[string]any
	conflicts []PolicyConflict
	failures  []error
}

type decided struct {
	value  string
	origin Origin
}

type candidate struct {
	policy *Policy
	rule   *rule
}

// layer decides the keys of one list (enforced or defaults) over the
// matching policies, in precedence order; skip leaves a key undecided and
// unevaluated. A key whose winning rule fails is left out of the map; the
// failure refuses the pod.
func (e *evaluation) layer(matched []*Policy, enforced bool, skip func(string) bool) map[string]decided {
	byKey := map[string][]candidate{}
	for _, p := range matched {
		list := p.defaults
		if enforced {
			list = p.enforced
		}
		for i := range list {
			if k := list[i].key; !skip(k) {
				byKey[k] = append(byKey[k], candidate{p, &list[i]})
			}
		}
	}
	out := map[string]decided{}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		cands := byKey[k]
		win := cands[0]
		v, ok := e.value(win)
		if !ok {
			continue
		}
		out[k] = decided{v, Origin{Policy: win.policy.name, Rule: win.rule.where, Enforced: enforced}}
		for _, c := range cands[1:] {
			if c.policy.priority != win.policy.priority {
				break
			}
			if lv, ok := e.value(c); ok && lv != v {
				e.conflicts = append(e.conflicts, PolicyConflict{Key: k, Winner: win.policy.name, Loser: c.policy.name, WinnerValue: v, LoserValue: lv})
			}
		}
	}
	return out
}

// value is a rule's value for the pod; a failure is recorded.
func (e *evaluation) value(c candidate) (string, bool) {
	if c.rule.prg == nil {
		return c.rule.value, true
	}
	v, err := evalString(c.rule.prg, e.vars)
	if err != nil {
		e.failures = append(e.failures, fmt.Errorf("policy %s %s: %w", bounded.Quoted(c.policy.name), c.rule.where, err))
		return "", false
	}
	return v, true
}

// evalString runs a compiled expression; its error says what to change.
func evalString(prg cel.Program, vars map[string]any) (string, error) {
	out, _, err := prg.Eval(vars)
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return "", fmt.Errorf("the expression exceeded its cost limit (%d) for this pod: make it do less work", CostLimit)
		}
		return "", fmt.Errorf("the expression failed for this pod: %w (guard what may be missing, e.g. 'team' in pod.labels ? pod.labels['team'] : 'none')", err)
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("the expression gave a %s, not a string", out.Type().TypeName())
	}
	if err := checkValue(s); err != nil {
		return "", fmt.Errorf("the expression's value is not a valid tag value: %w", err)
	}
	return s, nil
}
