package tagger

import (
	"maps"
	"testing"
)

// --tag-namespace keeps k8s-eni-tagger's meaning: "enable" prefixes keys
// with the pod's namespace, every other value (it took any) leaves them
// alone and is warned about.
func TestTagNamespaceFlagMeaning(t *testing.T) {
	for value, want := range map[string]map[string]string{
		"":         {"Team": "Dev"},
		"enable":   {"shop:Team": "Dev"},
		"disabled": {"Team": "Dev"},
		"Enable":   {"Team": "Dev"},
		"aws":      {"Team": "Dev"},
		"a:b":      {"Team": "Dev"},
	} {
		o := DefaultOptions()
		o.TagNamespace = value
		if err := o.Validate(); err != nil {
			t.Errorf("--tag-namespace=%q: %v", value, err)
		}
		got, err := o.policy().Desired("shop", map[string]string{"Team": "Dev"})
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("--tag-namespace=%q: %v %v, want %v", value, got, err, want)
		}
		if warned := len(o.Warnings()) > 0; warned != (value != "" && value != "enable") {
			t.Errorf("--tag-namespace=%q: warnings %q", value, o.Warnings())
		}
	}
}
