package tagger

import (
	"slices"
	"testing"
)

// The tally's figures follow each pod's latest line, a pod's line goes
// with it, and a policy's problems are listed whatever the verdict.
func TestPolicyTally(t *testing.T) {
	tl := newPolicyTally()
	tl.note("ns/a", tallied{namespace: "ns", matched: []string{"p", "q"}, verdict: verdictTagged})
	tl.note("ns/b", tallied{namespace: "ns", matched: []string{"p"}, verdict: verdictRefused, problem: "too many tags"})
	tl.note("other/c", tallied{namespace: "other", matched: []string{"q"}, verdict: verdictTagged, problem: "enforced over the annotation"})
	tl.note("ns/d", tallied{namespace: "ns"}) // selected by nothing: no line

	cases := []struct {
		policy   string
		want     policyCounts
		problems []string
	}{
		{"p", policyCounts{matched: 2, tagged: 1, refused: 1, problems: 1}, []string{"ns/b: too many tags"}},
		{"q", policyCounts{matched: 2, tagged: 2, problems: 1}, []string{"other/c: enforced over the annotation"}},
		{"none", policyCounts{}, nil},
	}
	for _, c := range cases {
		got, problems := tl.countsOf(c.policy, 3)
		if got != c.want || !slices.Equal(problems, c.problems) {
			t.Errorf("countsOf(%s) = %+v %q; want %+v %q", c.policy, got, problems, c.want, c.problems)
		}
	}
	if got := slices.Sorted(slices.Values(tl.podsIn("ns"))); !slices.Equal(got, []string{"ns/a", "ns/b"}) {
		t.Errorf("podsIn(ns) = %v", got)
	}
	if changed := tl.takeChanged(); !slices.Equal(changed, []string{"p", "q"}) || len(tl.takeChanged()) != 0 {
		t.Errorf("takeChanged = %v, then not empty", changed)
	}

	// b is fixed, a goes: p's figures follow, q's too.
	tl.note("ns/b", tallied{namespace: "ns", matched: []string{"p"}, verdict: verdictTagged})
	tl.drop("ns/a")
	if got, problems := tl.countsOf("p", 3); got != (policyCounts{matched: 1, tagged: 1}) || problems != nil {
		t.Errorf("p after the changes: %+v %q", got, problems)
	}
	if got, _ := tl.countsOf("q", 3); got != (policyCounts{matched: 1, tagged: 1, problems: 1}) {
		t.Errorf("q after a's drop: %+v", got)
	}
	if tl.has("ns/a") || !tl.has("ns/b") || !slices.Equal(tl.podsOf("p"), []string{"ns/b"}) {
		t.Errorf("lines after the changes: has(a) %v, has(b) %v, podsOf(p) %v", tl.has("ns/a"), tl.has("ns/b"), tl.podsOf("p"))
	}
}
