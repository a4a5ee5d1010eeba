package tagkeys

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestIsReserved(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"Team", false},
		{"eni-operator.io/cluster", true},
		{"ENI-Operator.IO/nodeeni", true},
		{"eni-tagger.io/hash", true},
		{"aws:cloudformation:stack-name", true},
		{"AWS:x", true},
		{"kubernetes.io/cluster/prod", true},
		{"kubernetes.io/role/elb", true},
		{"k8s.io/cluster-autoscaler/enabled", true},
		{"node.k8s.amazonaws.com/no_manage", true},
		{"cluster.k8s.amazonaws.com/name", true},
		{"vpcresources.k8s.aws/trunk-eni-id", true},
		{"cni.networking.k8s.aws/cluster/prod", true},
		{"eks:eni:owner", true},
		{"eks-cluster-name", true},
		{"karpenter.sh/nodepool", true},
		{"karpenter.k8s.aws/ec2nodeclass", true},
		{"elbv2.k8s.aws/cluster", true},
		{"service.k8s.aws/stack", true},
		{"ingress.k8s.aws/stack", true},
		// Look-alikes that are not reserved: only the prefixes are.
		{"my-kubernetes.io/x", false},
		{"eks", false},
		{"Node", false},
		{"NodeENI", false},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.key); got != tt.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestReservedIsACopy(t *testing.T) {
	r := Reserved()
	r[0].Prefix = "changed"
	if Reserved()[0].Prefix == "changed" {
		t.Fatal("Reserved returned shared state")
	}
	for _, res := range Reserved() {
		if res.Prefix != strings.ToLower(res.Prefix) || res.Owner == "" || res.Why == "" {
			t.Errorf("reservation %+v: prefixes are lower case and every entry says who and why", res)
		}
	}
}

// The NodeENI CRD validates spec.tags with a CEL rule that lists the
// prefixes again (the API server cannot call Go). This keeps it in step.
func TestCRDRuleListsEveryReservedPrefix(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/networking.k8s.aws_nodeenis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	tags := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["tags"]
	var m [][]byte
	for _, rule := range tags.XValidations {
		if m = regexp.MustCompile(`!\[([^\]]*)\]\.exists\(p, k\.lowerAscii\(\)\.startsWith\(p\)\)`).FindSubmatch([]byte(rule.Rule)); m != nil {
			break
		}
	}
	if m == nil {
		t.Fatal("the CRD has no reserved-key rule on spec.tags")
	}
	var inCRD []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllSubmatch(m[1], -1) {
		inCRD = append(inCRD, string(q[1]))
	}
	want := Prefixes()
	slices.Sort(inCRD)
	slices.Sort(want)
	if !slices.Equal(inCRD, want) {
		t.Fatalf("CRD rule lists %v, tagkeys.Reserved %v: update the marker on NodeENISpec.Tags and run make manifests", inCRD, want)
	}
}

// docs/security.md's table of reserved keys is what users read; it must
// list every prefix.
func TestDocsListEveryReservedPrefix(t *testing.T) {
	raw, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Reserved tag keys\n")
	if !ok {
		t.Fatal(`docs/security.md has no "## Reserved tag keys" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, p := range Prefixes() {
		if !strings.Contains(section, "| `"+p+"` |") {
			t.Errorf("docs/security.md's reserved-key table lacks %s", p)
		}
	}
}
