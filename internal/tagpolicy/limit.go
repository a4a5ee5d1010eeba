package tagpolicy

import (
	"fmt"
	"maps"
	"slices"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// MaxTagsPerENI is EC2's limit on the tags of one resource.
const MaxTagsPerENI = 50

// TooMany says whether an ENI would hold more than MaxTagsPerENI tags with
// the result's and ownTags others (the operator's own token, and whatever
// else the tagger counts there), and if so which keys to drop: the
// annotation's first (its author can), then the policies' defaults, then
// their enforced tags, each group by key.
func TooMany(r Result, ownTags int) error {
	total := len(r.Tags) + ownTags
	if total <= MaxTagsPerENI {
		return nil
	}
	var fromAnnotation, fromDefaults, fromEnforced []string
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		switch o := r.Origins[k]; {
		case o.Policy == "":
			fromAnnotation = append(fromAnnotation, bounded.Quoted(k)+" (annotation)")
		case o.Enforced:
			fromEnforced = append(fromEnforced, fmt.Sprintf("%s (enforced by policy %s)", bounded.Quoted(k), bounded.Quoted(o.Policy)))
		default:
			fromDefaults = append(fromDefaults, fmt.Sprintf("%s (default of policy %s)", bounded.Quoted(k), bounded.Quoted(o.Policy)))
		}
	}
	excess := total - MaxTagsPerENI
	drop := slices.Concat(fromAnnotation, fromDefaults, fromEnforced)
	drop = drop[:min(excess, len(drop))]
	return fmt.Errorf("%d tags: %d from the annotation, %d from policies and %d of the operator's own; an ENI holds at most %d: drop %d, e.g. %s",
		total, len(fromAnnotation), len(fromDefaults)+len(fromEnforced), ownTags, MaxTagsPerENI, excess, bounded.List(drop, ", ", bounded.Items))
}
