package tagpolicy

import (
	"os"
	"regexp"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// The CRD refuses reserved keys in defaults and enforced with a CEL rule
// that lists the prefixes again (the API server cannot call Go); it must
// list those of internal/tagkeys. Compile refuses them either way.
func TestCRDRuleListsEveryReservedPrefix(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/networking.k8s.aws_enitagpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	want := tagkeys.Prefixes()
	slices.Sort(want)
	for _, list := range []string{"defaults", "enforced"} {
		key := spec.Properties[list].Items.Schema.Properties["key"]
		var m [][]byte
		for _, rule := range key.XValidations {
			if m = regexp.MustCompile(`!\[([^\]]*)\]\.exists\(p, self\.lowerAscii\(\)\.startsWith\(p\)\)`).FindSubmatch([]byte(rule.Rule)); m != nil {
				break
			}
		}
		if m == nil {
			t.Fatalf("the CRD has no reserved-key rule on spec.%s[].key", list)
		}
		var inCRD []string
		for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllSubmatch(m[1], -1) {
			inCRD = append(inCRD, string(q[1]))
		}
		slices.Sort(inCRD)
		if !slices.Equal(inCRD, want) {
			t.Errorf("spec.%s[].key: the CRD rule lists %v, tagkeys.Reserved %v: update the marker on TagRule.Key and run make manifests", list, inCRD, want)
		}
	}
}
