package tagger

import (
	"fmt"
	"maps"
	"slices"

	"github.com/eni-operator/eni-operator/internal/bounded"
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
