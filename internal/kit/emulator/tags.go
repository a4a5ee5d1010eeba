package emulator

import (
	"strings"
	"unicode/utf8"
)

// EC2 tag limits (EC2 API reference, Tag; "Tag your Amazon EC2 resources").
const (
	maxTagsPerResource = 50
	maxTagKeyLength    = 127
	maxTagValueLength  = 256
	maxTagResources    = 1000
)

// validateTags checks new tags against AWS's rules, given the tags the
// resource already has (nil for a resource being created).
func validateTags(existing, add map[string]string) *apiError {
	for k, v := range add {
		if k == "" {
			return apiErr("InvalidParameterValue", "Tag key cannot be empty")
		}
		if utf8.RuneCountInString(k) > maxTagKeyLength {
			return apiErr("InvalidParameterValue", "Tag key exceeds the maximum length of %d characters", maxTagKeyLength)
		}
		if utf8.RuneCountInString(v) > maxTagValueLength {
			return apiErr("InvalidParameterValue", "Tag value exceeds the maximum length of %d characters", maxTagValueLength)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return apiErr("InvalidParameterValue", "Tag keys and values must be valid UTF-8")
		}
		if isReservedTagKey(k) {
			return apiErr("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	if countTags(existing, add) > maxTagsPerResource {
		return apiErr("TagLimitExceeded", "The maximum number of tags per resource (%d) was exceeded", maxTagsPerResource)
	}
	return nil
}

func isReservedTagKey(k string) bool { return len(k) >= 4 && strings.EqualFold(k[:4], "aws:") }

// countTags counts the user tags the resource would have after adding
// add; aws: tags do not count toward the limit.
func countTags(existing, add map[string]string) int {
	n := 0
	for k := range existing {
		if _, overwritten := add[k]; !overwritten && !isReservedTagKey(k) {
			n++
		}
	}
	return n + len(add)
}
