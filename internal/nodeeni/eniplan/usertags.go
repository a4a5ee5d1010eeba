package eniplan

import (
	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// userTag reports whether the controller may write a spec.tags entry:
// its key is not reserved, and key and value keep the product's
// character rule (tagkeys.CheckTag: UTF-8, no control characters, no
// white space at a key's ends). The CRD refuses both; this holds even
// where that validation is bypassed, so a tag left out is never written
// rather than reported.
func userTag(k, v string) bool { return !reservedTag(k) && tagkeys.CheckTag(k, v) == nil }

// SpecTags are a spec's tags as plain strings.
func SpecTags(in map[string]v1alpha1.TagValue) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = string(v)
	}
	return out
}
