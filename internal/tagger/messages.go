package tagger

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// Everything the tagger writes about a pod — condition messages, event
// notes, log lines — quotes what the pod's owner or EC2 said, and is kept
// short whatever they said: a condition etcd refuses turns into a retry
// loop, an event over 1 KiB is lost, and megabytes of log help nobody.

// invalidMessage is the InvalidTags message for an error of
// ParseAnnotation or Policy.Desired: the first bounded.Items problems,
// how many more there are, all within bounded.Message.
func invalidMessage(annotationKey string, err error) string {
	head := fmt.Sprintf("annotation %s is invalid: ", annotationKey)
	return head + bounded.ListWithin(bounded.Errors(err), "; ", bounded.Items, bounded.Message-len(head))
}

// errorText is an error (EC2's, the API server's) as a bounded one-line
// piece of a message.
func errorText(err error) string {
	return bounded.ListWithin(bounded.Errors(err), "; ", bounded.Items, bounded.Message/2)
}

// describe lists tags as key="value" for a message, a few of them.
func describe(tags map[string]string) string {
	if len(tags) == 0 {
		return "nothing"
	}
	keys := slices.Sorted(maps.Keys(tags))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%s", bounded.Truncate(k, bounded.Quote), bounded.Quoted(tags[k]))
	}
	return bounded.ListWithin(parts, ", ", bounded.Items, bounded.Message/3)
}

// conflictsText lists the keys pods sharing an ENI disagree on, with who
// wants what, a few of them.
func conflictsText(conflicts map[string]string) string {
	keys := slices.Sorted(maps.Keys(conflicts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%s)", bounded.Quoted(k), bounded.Truncate(conflicts[k], bounded.Message/4))
	}
	return bounded.ListWithin(parts, "; ", bounded.Items, bounded.Message/2)
}

// originsText says which tag policy gave which key, for the Synced
// condition; "" when no policy gave any.
func originsText(origins map[string]tagpolicy.Origin) string {
	byPolicy := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(origins)) {
		if o := origins[k]; o.Policy != "" {
			kind := "default"
			if o.Enforced {
				kind = "enforced"
			}
			byPolicy[o.Policy] = append(byPolicy[o.Policy], bounded.Quoted(k)+" ("+kind+")")
		}
	}
	if len(byPolicy) == 0 {
		return ""
	}
	parts := make([]string, 0, len(byPolicy))
	for _, name := range slices.Sorted(maps.Keys(byPolicy)) {
		parts = append(parts, "policy "+bounded.Quoted(name)+" gave "+bounded.List(byPolicy[name], ", ", bounded.Items))
	}
	return "; " + strings.Join(parts, "; ")
}

// disputesText tells the annotation's keys an enforced tag overrides and
// the keys two policies of equal priority disagree on; "" when none.
func disputesText(w *podWork) string {
	var parts []string
	for _, c := range w.overridden {
		parts = append(parts, fmt.Sprintf("policy %s enforces %s=%s over the annotation's %s", bounded.Quoted(c.Policy), bounded.Quoted(c.Key), bounded.Quoted(c.Enforced), bounded.Quoted(c.Annotation)))
	}
	for _, c := range w.externalConflicts {
		outcome := "the key is left to other tools"
		if c.EnforcerWins {
			outcome = "the enforced value wins by priority"
		}
		parts = append(parts, fmt.Sprintf("policy %s enforces %s, which policy %s leaves to other tools (externallyManagedKeys): %s",
			bounded.Quoted(c.Enforcer), bounded.Quoted(c.Key), bounded.Quoted(c.External), outcome))
	}
	for _, c := range w.policyConflicts {
		parts = append(parts, fmt.Sprintf("policies %s and %s (equal priority) disagree on %s: %s wins by name over %s",
			bounded.Quoted(c.Winner), bounded.Quoted(c.Loser), bounded.Quoted(c.Key), bounded.Quoted(c.WinnerValue), bounded.Quoted(c.LoserValue)))
	}
	return bounded.List(parts, "; ", bounded.Items)
}
