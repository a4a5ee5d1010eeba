package iam

// A small evaluator of identity-based IAM policies, enough for the
// operators these documents use, with AWS's documented semantics:
//
//   - an explicit Deny beats any Allow; no matching Allow is a deny;
//   - condition operators are ANDed, keys under one operator are ANDed,
//     values of one key are ORed (NOR for a negated operator);
//   - a key missing from the request context makes a positive operator
//     false and a negated one (StringNotEquals) true;
//   - ForAnyValue is false when the key is missing or empty; ForAllValues
//     is true then;
//   - ...IfExists is true when the key is missing;
//   - ArnLike/ArnEquals match each of an ARN's six parts separately;
//   - Null "true" holds when the key is missing, "false" when present;
//   - context key names are case-insensitive, values case-sensitive.
//
// An operator it does not know fails the test, so a document cannot grow
// a condition this evaluator would silently misjudge.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Policy is an IAM policy document.
type Policy struct {
	Version   string
	Statement []Statement
}

// Statement is one statement; NotAction, NotResource and Principal are
// refused when decoding (DisallowUnknownFields).
type Statement struct {
	Sid       string
	Effect    string
	Action    Strings
	Resource  Strings
	Condition map[string]map[string]Strings
}

// Strings is IAM's "a string or a list of strings".
type Strings []string

// UnmarshalJSON accepts both forms.
func (s *Strings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// Request is one authorization EC2 performs: an action on one resource
// with its context. A call that touches several resources (Attach: the
// ENI and the instance) needs every one of its requests allowed.
type Request struct {
	Action   string
	Resource string
	// Context maps condition keys to values; aws:TagKeys is the only
	// multivalued key here. Resource tags go in as aws:ResourceTag/<key>.
	Context map[string][]string
}

// Decision is the outcome of evaluating requests.
type Decision int

const (
	ImplicitDeny Decision = iota
	Allowed
	ExplicitDeny
)

func (d Decision) String() string {
	return [...]string{"implicit deny", "allowed", "explicit deny"}[d]
}

// globMatch is IAM's wildcard match: * any run, ? one character.
func globMatch(pattern, s string) bool {
	// Not path.Match: it treats '/' specially and knows [ ] and \; IAM
	// does not.
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pattern[1:], s[1:])
	default:
		return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
	}
}

// Evaluate decides a set of requests against the policies attached to
// one principal: allowed only if every request is allowed.
func Evaluate(policies []Policy, reqs ...Request) (Decision, error) {
	overall := Allowed
	for _, r := range reqs {
		d, err := evaluateOne(policies, r)
		if err != nil {
			return 0, err
		}
		if d == ExplicitDeny {
			return ExplicitDeny, nil
		}
		if d == ImplicitDeny {
			overall = ImplicitDeny
		}
	}
	return overall, nil
}

func evaluateOne(policies []Policy, r Request) (Decision, error) {
	ctx := map[string][]string{}
	for k, v := range r.Context {
		ctx[strings.ToLower(k)] = v
	}
	allowed := false
	for _, p := range policies {
		for _, st := range p.Statement {
			ok, err := applies(st, r.Action, r.Resource, ctx)
			if err != nil {
				return 0, fmt.Errorf("statement %s: %w", st.Sid, err)
			}
			if !ok {
				continue
			}
			if st.Effect == "Deny" {
				return ExplicitDeny, nil
			}
			allowed = true
		}
	}
	if allowed {
		return Allowed, nil
	}
	return ImplicitDeny, nil
}

func applies(st Statement, action, resource string, ctx map[string][]string) (bool, error) {
	if !slices.ContainsFunc(st.Action, func(a string) bool {
		return globMatch(strings.ToLower(a), strings.ToLower(action))
	}) {
		return false, nil
	}
	if !slices.ContainsFunc(st.Resource, func(p string) bool { return globMatch(p, resource) }) {
		return false, nil
	}
	for op, keys := range st.Condition {
		for key, want := range keys {
			have, present := ctx[strings.ToLower(key)]
			ok, err := condition(op, want, have, present)
			if err != nil {
				return false, fmt.Errorf("%s %s: %w", op, key, err)
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}

// condition decides one operator on one key. A set operator prefix
// (ForAllValues:, ForAnyValue:) and the IfExists suffix wrap a base
// operator that decides a single value.
func condition(op string, want []string, have []string, present bool) (bool, error) {
	if op == "Null" {
		if len(want) != 1 || (want[0] != "true" && want[0] != "false") {
			return false, fmt.Errorf("Null takes \"true\" or \"false\"")
		}
		return (want[0] == "true") == !present, nil
	}
	set, base, _ := strings.Cut(op, ":")
	if base == "" {
		set, base = "", op
	}
	base, ifExists := strings.CutSuffix(base, "IfExists")
	match, negated, err := baseOperator(base)
	if err != nil {
		return false, err
	}
	// A value satisfies a positive operator when it matches one of the
	// condition's values (OR), a negated one when it matches none (NOR).
	holds := func(v string) bool {
		m := slices.ContainsFunc(want, func(w string) bool { return match(w, v) })
		return m != negated
	}
	switch set {
	case "ForAllValues":
		if ifExists {
			return false, fmt.Errorf("IfExists with a set operator is not modelled")
		}
		// True when the key is missing or empty: every value (none) holds.
		return !slices.ContainsFunc(have, func(v string) bool { return !holds(v) }), nil
	case "ForAnyValue":
		if ifExists {
			return false, fmt.Errorf("IfExists with a set operator is not modelled")
		}
		return slices.ContainsFunc(have, holds), nil // false when missing or empty
	case "":
	default:
		return false, fmt.Errorf("set operator %q the test's evaluator does not know", set)
	}
	if len(have) > 1 {
		return false, fmt.Errorf("single-valued operator on a multivalued key; use ForAnyValue/ForAllValues")
	}
	if !present || len(have) == 0 {
		return ifExists || negated, nil
	}
	return holds(have[0]), nil
}

// baseOperator returns how a single-valued operator compares a condition
// value with a request value, and whether it is negated.
func baseOperator(op string) (match func(want, have string) bool, negated bool, err error) {
	equals := func(w, h string) bool { return w == h }
	switch op {
	case "StringEquals":
		return equals, false, nil
	case "StringNotEquals":
		return equals, true, nil
	case "StringLike":
		return globMatch, false, nil
	case "StringNotLike":
		return globMatch, true, nil
	case "ArnEquals", "ArnLike":
		return arnLike, false, nil
	case "ArnNotEquals", "ArnNotLike":
		return arnLike, true, nil
	}
	return nil, false, fmt.Errorf("operator %q the test's evaluator does not know; extend eval_test.go with AWS's semantics for it", op)
}

// arnLike is ArnLike (and ArnEquals, which IAM treats alike): each of
// the six colon-separated parts of the ARN is matched on its own, with *
// and ? wildcards, so a * never spans a colon. A value that is not an
// ARN does not match.
func arnLike(pattern, arn string) bool {
	pp, ap := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(pp) != 6 || len(ap) != 6 {
		return false
	}
	for i := range pp {
		if !globMatch(pp[i], ap[i]) {
			return false
		}
	}
	return true
}
