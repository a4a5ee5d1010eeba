package tagger

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestPolicyDesired(t *testing.T) {
	many := map[string]string{}
	for i := range 50 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	tests := []struct {
		name   string
		policy Policy
		in     map[string]string
		want   map[string]string
		err    []string
	}{
		{name: "plain", in: map[string]string{"Team": "Dev"}, want: map[string]string{"Team": "Dev"}},
		{name: "aws prefix any case", in: map[string]string{"AWS:x": "1"}, err: []string{`tag "AWS:x": keys starting with aws:`}},
		{name: "cluster prefix", in: map[string]string{"kubernetes.io/cluster/c": "owned"}, err: []string{"reserved"}},
		{name: "eks prefix", in: map[string]string{"Eks:x": "1"}, err: []string{"reserved"}},
		{name: "own prefix", in: map[string]string{"ENI-Tagger.io/hash": "1"}, err: []string{"reserved"}},
		{name: "key too long", in: map[string]string{strings.Repeat("k", 128): "v"}, err: []string{"key is 128 characters, the limit is 127"}},
		{name: "key at limit", in: map[string]string{strings.Repeat("k", 127): "v"}, want: map[string]string{strings.Repeat("k", 127): "v"}},
		{name: "value too long", in: map[string]string{"k": strings.Repeat("v", 257)}, err: []string{"value is 257 characters, the limit is 256"}},
		{name: "value at limit, multibyte", in: map[string]string{"k": strings.Repeat("é", 256)}, want: map[string]string{"k": strings.Repeat("é", 256)}},
		{name: "invalid utf8", in: map[string]string{"k": "\xff"}, err: []string{"valid UTF-8"}},
		{name: "too many", in: many, err: []string{"50 tags asked for; an ENI holds at most 50"}},
		{name: "deny wins", policy: Policy{Allow: []string{"*"}, Deny: []string{"Secret*"}}, in: map[string]string{"SecretKey": "x"}, err: []string{`tag "SecretKey": key not allowed`}},
		{name: "allow list", policy: Policy{Allow: []string{"team/*", "Cost"}}, in: map[string]string{"team/a/b": "x", "Cost": "1"}, want: map[string]string{"team/a/b": "x", "Cost": "1"}},
		{name: "outside allow list", policy: Policy{Allow: []string{"team/*"}}, in: map[string]string{"Other": "x"}, err: []string{"not allowed"}},
		{name: "every problem reported", in: map[string]string{"aws:a": "1", "b": strings.Repeat("v", 300)}, err: []string{`"aws:a"`, `"b": value is 300`}},
		{name: "pod namespace prefix", policy: Policy{Namespacing: NamespacingPodNamespace}, in: map[string]string{"Team": "Dev"}, want: map[string]string{"shop:Team": "Dev"}},
		{name: "fixed prefix", policy: Policy{Namespacing: "acme"}, in: map[string]string{"Team": "Dev"}, want: map[string]string{"acme:Team": "Dev"}},
		{name: "prefix counts toward length", policy: Policy{Namespacing: "acme"}, in: map[string]string{strings.Repeat("k", 125): "v"}, err: []string{"key is 130 characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.policy.Desired("shop", tt.in)
			if len(tt.err) > 0 {
				if err == nil {
					t.Fatalf("Desired(%v) succeeded, want errors %q", tt.in, tt.err)
				}
				for _, e := range tt.err {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q does not mention %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("Desired = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []Policy{{Namespacing: "a:b"}, {Namespacing: "aws"}, {Allow: []string{" "}}, {Namespacing: strings.Repeat("x", 101)}} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted a bad policy", p)
		}
	}
	if err := (Policy{Namespacing: "enable", Allow: []string{"a*"}}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tt := range []struct {
		pat, s string
		want   bool
	}{{"a", "a", true}, {"a", "b", false}, {"*", "", true}, {"a*", "a/b/c", true}, {"*c", "abc", true}, {"a*c", "ac", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false}, {"a*a", "a", false}} {
		if got := globMatch(tt.pat, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
}
