package emulator

import (
	"net/url"
	"strconv"
	"strings"
)

// params reads the flattened lists of the EC2 Query protocol
// (Name.1, Name.2, Name.1.Sub, ...).
type params url.Values

func (p params) get(key string) string { return url.Values(p).Get(key) }

func (p params) has(key string) bool {
	_, ok := p[key]
	return ok
}

// list returns Name.1 .. Name.N, stopping at the first gap.
func (p params) list(name string) []string {
	var out []string
	for i := 1; ; i++ {
		k := name + "." + strconv.Itoa(i)
		if !p.has(k) {
			return out
		}
		out = append(out, p.get(k))
	}
}

// count returns how many Name.N.* members are present.
func (p params) members(name string) int {
	n := 0
	for i := 1; ; i++ {
		prefix := name + "." + strconv.Itoa(i)
		found := false
		for k := range p {
			if k == prefix || strings.HasPrefix(k, prefix+".") {
				found = true
				break
			}
		}
		if !found {
			return n
		}
		n++
	}
}

func (p params) bool(key string) bool {
	return strings.EqualFold(p.get(key), "true")
}

// int reads an integer parameter; ok is false when it is absent.
func (p params) int(key string) (int, bool, *apiError) {
	if !p.has(key) {
		return 0, false, nil
	}
	v, err := strconv.Atoi(p.get(key))
	if err != nil {
		return 0, false, apiErr("InvalidParameterValue", "Value (%s) for parameter %s is invalid. Expected an integer.", p.get(key), key)
	}
	return v, true, nil
}

func (p params) required(key string) (string, *apiError) {
	v := p.get(key)
	if v == "" {
		return "", apiErr("MissingParameter", "The request must contain the parameter %s", key)
	}
	return v, nil
}

// filter is one Filter.N: a name and its ORed values.
type filter struct {
	name   string
	values []string
}

// maxFilterValues is EC2's limit on filter values in one call.
const maxFilterValues = 200

func (p params) filters() ([]filter, *apiError) {
	var out []filter
	total := 0
	for i := 1; i <= p.members("Filter"); i++ {
		prefix := "Filter." + strconv.Itoa(i)
		f := filter{name: p.get(prefix + ".Name"), values: p.list(prefix + ".Value")}
		if f.name == "" {
			return nil, apiErr("InvalidParameterValue", "The filter name must not be empty")
		}
		total += len(f.values)
		out = append(out, f)
	}
	if total > maxFilterValues {
		return nil, apiErr("FilterLimitExceeded", "The maximum number of filter values specified on a single call is %d", maxFilterValues)
	}
	return out, nil
}

// tags reads Prefix.N.Key / Prefix.N.Value. present tells, per tag,
// whether a Value was given at all (DeleteTags distinguishes that).
func (p params) tags(prefix string) (keys, values []string, present []bool) {
	for i := 1; i <= p.members(prefix); i++ {
		k := prefix + "." + strconv.Itoa(i)
		keys = append(keys, p.get(k+".Key"))
		values = append(values, p.get(k+".Value"))
		present = append(present, p.has(k+".Value"))
	}
	return keys, values, present
}

// tagSpecifications returns the tags of TagSpecification.N for a resource type.
func (p params) tagSpecifications(resourceType string) (map[string]string, *apiError) {
	out := map[string]string{}
	for i := 1; i <= p.members("TagSpecification"); i++ {
		prefix := "TagSpecification." + strconv.Itoa(i)
		rt := p.get(prefix + ".ResourceType")
		if rt != resourceType {
			return nil, apiErr("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		keys, values, _ := p.tags(prefix + ".Tag")
		for j, k := range keys {
			out[k] = values[j]
		}
	}
	if err := validateTags(nil, out); err != nil {
		return nil, err
	}
	return out, nil
}
