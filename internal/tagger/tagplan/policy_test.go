package tagplan

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/tagkeys"
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
		{name: "NUL smuggling reserved keys", in: map[string]string{"A": "x\x00eni-operator.io/cluster\x00sandbox\x00", "D": "x\x00Note"},
			err: []string{`tag "A": the value holds U+0000`, `tag "D": the value holds U+0000`}},
		{name: "C1 in a key", in: map[string]string{"a\u009b": "v"}, err: []string{"U+009B"}},
		{name: "key with a trailing space", in: map[string]string{"Team ": "v"}, err: []string{"ends with white space"}},
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

// Every reserved prefix of the product's list (internal/tagkeys) is
// refused in any letter case, as the key a pod writes and as the key
// --tag-namespace makes of it, and the message names the prefix.
func TestPolicyRefusesEveryReservedPrefix(t *testing.T) {
	keys := map[string]string{ // a key under each prefix, as an attacker would write it
		"eni-operator.io/":           "eni-operator.io/cluster",
		"eni-tagger.io/":             "eni-tagger.io/hash",
		"aws:":                       "aws:cloudformation:stack-name",
		"kubernetes.io/":             "kubernetes.io/cluster/prod",
		"k8s.io/":                    "k8s.io/cluster-autoscaler/enabled",
		"node.k8s.amazonaws.com/":    "node.k8s.amazonaws.com/no_manage",
		"cluster.k8s.amazonaws.com/": "cluster.k8s.amazonaws.com/name",
		"vpcresources.k8s.aws/":      "vpcresources.k8s.aws/trunk-eni-id",
		"eks:":                       "eks:eni:owner",
		"eks-cluster-name":           "eks-cluster-name",
		"karpenter.sh/":              "karpenter.sh/nodepool",
		"karpenter.k8s.aws/":         "karpenter.k8s.aws/ec2nodeclass",
		"elbv2.k8s.aws/":             "elbv2.k8s.aws/cluster",
		"service.k8s.aws/":           "service.k8s.aws/stack",
		"ingress.k8s.aws/":           "ingress.k8s.aws/stack",
		"cni.networking.k8s.aws/":    "cni.networking.k8s.aws/subnet",
	}
	for _, prefix := range tagkeys.Prefixes() {
		key, ok := keys[prefix]
		if !ok { // a prefix added to the list since: any key under it
			key = prefix + "x"
		}
		for _, k := range []string{key, strings.ToUpper(key), mixedCase(key)} {
			for _, p := range []Policy{{}, {Namespacing: NamespacingPodNamespace}, {Allow: []string{"*"}}} {
				got, err := p.Desired("shop", map[string]string{k: "x", "Team": "Dev"})
				if err == nil {
					t.Errorf("policy %+v accepted reserved key %q: %v", p, k, got)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, "keys starting with "+prefix+" are reserved") {
					t.Errorf("policy %+v, key %q: message %q does not name the prefix %q", p, k, msg, prefix)
				}
			}
		}
	}
	// --tag-namespace turns harmless keys into reserved ones when the
	// namespace (or the fixed prefix) is itself a reserved prefix.
	for _, tt := range []struct {
		policy    Policy
		namespace string
		prefix    string
	}{
		{Policy{Namespacing: NamespacingPodNamespace}, "aws", "aws:"},
		{Policy{Namespacing: NamespacingPodNamespace}, "AWS", "aws:"},
		{Policy{Namespacing: NamespacingPodNamespace}, "eks", "eks:"},
		{Policy{Namespacing: NamespacingPodNamespace}, "Eks", "eks:"},
		{Policy{Namespacing: NamespacingPodNamespace}, "eks-cluster-name", "eks-cluster-name"},
		{Policy{Namespacing: "Aws"}, "shop", "aws:"}, // Validate refuses it; Desired holds even so
		{Policy{Namespacing: "EKS"}, "shop", "eks:"},
	} {
		got, err := tt.policy.Desired(tt.namespace, map[string]string{"Team": "Dev"})
		if err == nil {
			t.Errorf("policy %+v in namespace %q accepted Team: %v", tt.policy, tt.namespace, got)
			continue
		}
		if !strings.Contains(err.Error(), "keys starting with "+tt.prefix+" are reserved") {
			t.Errorf("policy %+v in namespace %q: %q does not name %q", tt.policy, tt.namespace, err, tt.prefix)
		}
		if tt.policy.Namespacing != NamespacingPodNamespace && tt.policy.Validate() == nil {
			t.Errorf("Validate accepted --tag-namespace %q", tt.policy.Namespacing)
		}
	}
	// Look-alikes stay allowed: only the prefixes are reserved.
	for _, k := range []string{"my-eni-operator.io/x", "awsome", "eks", "Team/aws:x", "node.k8s.amazonaws.com"} {
		if _, err := (Policy{}).Desired("shop", map[string]string{k: "x"}); err != nil {
			t.Errorf("look-alike %q refused: %v", k, err)
		}
	}
}

// mixedCase alternates the letter case of s.
func mixedCase(s string) string {
	b := []rune(s)
	for i := range b {
		if i%2 == 0 {
			b[i] = []rune(strings.ToUpper(string(b[i])))[0]
		}
	}
	return string(b)
}
