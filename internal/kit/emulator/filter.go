package emulator

import "strings"

// fieldFunc returns the values a resource has for a filter name, and
// whether the filter name is known for that resource type at all.
type fieldFunc func(name string) (values []string, known bool)

// matchAll reports whether a resource passes every filter (filters are
// ANDed, the values of one filter ORed). An unknown filter name is an error.
func matchAll(filters []filter, fields fieldFunc) (bool, *apiError) {
	for _, f := range filters {
		have, known := fields(f.name)
		if !known {
			return false, apiErr("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
		if !anyMatch(f.values, have) {
			return false, nil
		}
	}
	return true, nil
}

// validateFilters rejects unknown filter names even when there is nothing
// to match them against.
func validateFilters(filters []filter, fields fieldFunc) *apiError {
	for _, f := range filters {
		if _, known := fields(f.name); !known {
			return apiErr("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	return nil
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// ownedFields answers owner-id (this account) and the tag filters, which
// ENIs, VPCs, subnets and security groups support alike.
func (w *world) ownedFields(tags map[string]string, name string) ([]string, bool) {
	if name == "owner-id" {
		return []string{w.accountID}, true
	}
	return tagFields(tags, name)
}

// tagFields answers the tag filters every taggable resource supports.
func tagFields(tags map[string]string, name string) ([]string, bool) {
	switch {
	case strings.HasPrefix(name, "tag:"):
		if v, ok := tags[name[len("tag:"):]]; ok {
			return []string{v}, true
		}
		return nil, true
	case name == "tag-key":
		out := make([]string, 0, len(tags))
		for k := range tags {
			out = append(out, k)
		}
		return out, true
	case name == "tag-value":
		out := make([]string, 0, len(tags))
		for _, v := range tags {
			out = append(out, v)
		}
		return out, true
	}
	return nil, false
}

// wildcardMatch matches EC2 filter patterns: * is any run of characters,
// ? is one character, and a backslash escapes either.
func wildcardMatch(pattern, s string) bool {
	p, v := []rune(pattern), []rune(s)
	// Iterative matcher with single-star backtracking: linear in practice.
	pi, vi, star, mark := 0, 0, -1, 0
	for vi < len(v) {
		if pi < len(p) {
			c, lit := p[pi], false
			width := 1
			if c == '\\' && pi+1 < len(p) {
				c, lit, width = p[pi+1], true, 2
			}
			switch {
			case c == '*' && !lit:
				star, mark = pi, vi
				pi++
				continue
			case (c == '?' && !lit) || c == v[vi]:
				pi += width
				vi++
				continue
			}
		}
		if star >= 0 {
			pi = star + 1
			mark++
			vi = mark
			continue
		}
		return false
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
