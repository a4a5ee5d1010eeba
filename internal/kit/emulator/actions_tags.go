package emulator

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

type describeTagsResponse struct {
	respMeta
	Tags      []xTagDescription `xml:"tagSet>item"`
	NextToken string            `xml:"nextToken,omitempty"`
}

// tagTargets resolves ResourceId.N, all or nothing.
func (w *world) tagTargets(p params) ([]*resource, *apiError) {
	ids := p.list("ResourceId")
	if len(ids) == 0 {
		return nil, apiErr("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	if len(ids) > maxTagResources {
		return nil, apiErr("InvalidParameterValue", "The request can reference at most %d resources; it references %d", maxTagResources, len(ids))
	}
	out := make([]*resource, 0, len(ids))
	for _, id := range ids {
		r, _, ok := w.taggable(id)
		if !ok {
			return nil, notFoundByID(id)
		}
		out = append(out, r)
	}
	return out, nil
}

func createTags(w *world, p params, env callEnv) (response, *apiError) {
	targets, err := w.tagTargets(p)
	if err != nil {
		return nil, err
	}
	keys, values, _ := p.tags("Tag")
	if len(keys) == 0 {
		return nil, apiErr("MissingParameter", "The request must contain the parameter tagSet")
	}
	add := make(map[string]string, len(keys))
	for i, k := range keys {
		add[k] = values[i]
	}
	for _, r := range targets {
		if err := validateTags(r.tags, add); err != nil {
			return nil, err
		}
	}
	for _, r := range targets {
		w.writeTags(r, env, func(tags map[string]string) { maps.Copy(tags, add) })
	}
	return &returnResponse{Return: true}, nil
}

func deleteTags(w *world, p params, env callEnv) (response, *apiError) {
	targets, err := w.tagTargets(p)
	if err != nil {
		return nil, err
	}
	keys, values, present := p.tags("Tag")
	for _, k := range keys {
		if isReservedTagKey(k) {
			return nil, apiErr("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
	}
	for _, r := range targets {
		w.writeTags(r, env, func(tags map[string]string) {
			if len(keys) == 0 {
				// No Tag.N at all deletes every user tag.
				maps.DeleteFunc(tags, func(k, _ string) bool { return !isReservedTagKey(k) })
				return
			}
			for i, k := range keys {
				if v, ok := tags[k]; ok && (!present[i] || v == values[i]) {
					delete(tags, k)
				}
			}
		})
	}
	return &returnResponse{Return: true}, nil
}

func describeTags(w *world, p params, _ callEnv) (response, *apiError) {
	filters, err := p.filters()
	if err != nil {
		return nil, err
	}
	type entry struct {
		seq int64
		xTagDescription
	}
	fields := func(e entry) fieldFunc {
		return func(name string) ([]string, bool) {
			switch name {
			case "resource-id":
				return []string{e.ResourceID}, true
			case "resource-type":
				return []string{e.ResourceType}, true
			case "key":
				return []string{e.Key}, true
			case "value":
				return []string{e.Value}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, fields(entry{})); err != nil {
		return nil, err
	}
	var all []entry
	add := func(r *resource, kind string) {
		tags := w.describedTags(r)
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			e := entry{xTagDescription: xTagDescription{ResourceID: r.id, ResourceType: kind, Key: k, Value: tags[k]}}
			if ok, _ := matchAll(filters, fields(e)); ok {
				all = append(all, e)
			}
		}
	}
	for _, v := range w.vpcs {
		add(&v.resource, "vpc")
	}
	for _, s := range w.subnets {
		add(&s.resource, "subnet")
	}
	for _, g := range w.groups {
		add(&g.resource, "security-group")
	}
	for _, i := range w.instances {
		add(&i.resource, "instance")
	}
	for _, n := range w.enis {
		add(&n.resource, "network-interface")
	}
	slices.SortStableFunc(all, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.ResourceID, b.ResourceID), strings.Compare(a.Key, b.Key))
	})
	for i := range all {
		all[i].seq = int64(i + 1)
	}
	pg, next, err := page(all, func(e entry) int64 { return e.seq }, p)
	if err != nil {
		return nil, err
	}
	resp := &describeTagsResponse{NextToken: next}
	for _, e := range pg {
		resp.Tags = append(resp.Tags, e.xTagDescription)
	}
	return resp, nil
}
