package tagplan

import (
	"fmt"
	"slices"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// MergeShared combines the tags several pods ask for on one shared ENI.
// A key the pods disagree on is left out of the result and reported with
// every pod's value, so no pod's reconcile can flip it back and forth.
func MergeShared(wants map[string]map[string]string) (merged map[string]string, conflicts map[string]string) {
	merged = map[string]string{}
	values := map[string]map[string][]string{} // key -> value -> pods
	for pod, tags := range wants {
		for k, v := range tags {
			if values[k] == nil {
				values[k] = map[string][]string{}
			}
			values[k][v] = append(values[k][v], pod)
		}
	}
	conflicts = map[string]string{}
	for k, byValue := range values {
		if len(byValue) == 1 {
			for v := range byValue {
				merged[k] = v
			}
			continue
		}
		var parts []string
		for v, pods := range byValue {
			slices.Sort(pods)
			parts = append(parts, fmt.Sprintf("%s wants %s", bounded.List(pods, ", ", bounded.Items), bounded.Quoted(v)))
		}
		slices.Sort(parts)
		conflicts[k] = bounded.List(parts, "; ", bounded.Items)
	}
	return merged, conflicts
}
