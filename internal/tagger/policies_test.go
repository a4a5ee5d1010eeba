package tagger

import (
	"slices"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// put keeps the policies sorted by name, returns the one replaced or
// removed, and never changes a slice a reader was given.
func TestPoliciesPut(t *testing.T) {
	p, err := NewPolicies(nil)
	if err != nil {
		t.Fatal(err)
	}
	compile := func(name string) *tagpolicy.Policy {
		c, err := p.compiler.Compile(name, v1alpha1.ENITagPolicySpec{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	names := func(list []*tagpolicy.Policy) []string {
		var out []string
		for _, q := range list {
			out = append(out, q.Name())
		}
		return out
	}
	b, a, c := compile("b"), compile("a"), compile("c")
	for _, q := range []*tagpolicy.Policy{b, a, c} {
		if old := p.put(q.Name(), q); old != nil {
			t.Errorf("put(%s) replaced %s", q.Name(), old.Name())
		}
	}
	seen := p.all()
	if got := names(seen); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("all() = %v", got)
	}
	for _, name := range []string{"c", "a"} {
		if old := p.put(name, nil); old == nil || old.Name() != name {
			t.Errorf("put(%s, nil) returned %v; want the removed policy", name, old)
		}
	}
	if got := names(p.all()); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after removals all() = %v", got)
	}
	if got := names(seen); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("a reader's slice changed to %v", got)
	}
	if old := p.put("zz", nil); old != nil || p.put("b", compile("b")) != b {
		t.Error("put of an unknown name removed something, or a replacement did not return the old policy")
	}
}
