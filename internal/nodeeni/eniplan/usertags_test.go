package eniplan

import (
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// Issue 25: spec.tags holding NULs made ENIs carrying
// kubernetes.io/cluster/victim-cluster=owned and karpenter.sh/nodepool=evil
// through the NUL-joined tag-set encoding. The CRD refuses such tags; the
// controller never writes one even when that validation is bypassed (a
// CRD installed by hand, an older CRD): neither at creation, adoption nor
// in a later tag update. Clean tags are still written.
func TestSpecTagsOutsideTheCharacterRuleAreNeverWritten(t *testing.T) {
	spec := map[string]string{
		"Team":               "x\x00kubernetes.io/cluster/victim-cluster\x00owned\x00karpenter.sh/nodepool\x00evil",
		"x\x00Note":          "kubernetes.io/cluster/victim-cluster",
		"bell":               "ring\a",
		"c1":                 "\u0085",
		" padded":            "v",
		"invalid":            "\xff",
		"Cost center":        "42",
		"eni-tagger.io/hash": "0",
	}
	clean := map[string]string{"Cost center": "42"}
	check := func(what string, tags map[string]string) {
		t.Helper()
		for k, v := range tags {
			if err := tagkeys.CheckTag(k, v); err != nil {
				t.Errorf("%s writes %q=%q: %v", what, k, v, err)
			}
			if strings.Contains(k, "victim-cluster") || strings.Contains(v, "victim-cluster") {
				t.Errorf("%s writes %q=%q", what, k, v)
			}
		}
		for k, v := range clean {
			if tags[k] != v {
				t.Errorf("%s lacks the clean tag %q=%q: %q", what, k, v, tags)
			}
		}
	}
	created := OwnershipTags(OwnedBy{Cluster: "prod", NodeENI: "multus", UID: "uid-1", Base: 1, Created: time.Now()}, Want{Node: "n1", Instance: "i-1"}, 1, spec)
	check("ownershipTags", created)
	if created[TagCluster] != "prod" {
		t.Errorf("ownershipTags: %q", created)
	}
	check("userTagDiff", userTagDiff(map[string]string{"Cost center": "41"}, spec))
	check("userTagDiff from nothing", userTagDiff(nil, spec))
}
