package tagger

import (
	"maps"
	"slices"
	"sync"
)

// policyVerdict is where a pod selected by tag policies stands.
type policyVerdict uint8

const (
	verdictPending policyVerdict = iota // not yet in sync (looking up, writing, waiting)
	verdictTagged                       // its ENI carries the policies' tags
	verdictRefused                      // refused: PolicyRefused
)

// tallied is one pod's line in the tally.
type tallied struct {
	namespace string
	matched   []string // the ENITagPolicies that select it
	verdict   policyVerdict
	problem   string // what its policies' status should say about it
}

// policyCounts are one policy's figures for its status.
type policyCounts struct{ matched, tagged, refused, problems int }

// policyTally keeps, for each pod tag policies select, which policies
// and where it stands, so each policy's status counts its pods and a
// policy's change or deletion finds the pods it tagged. It is the only
// per-pod state of tag policies; a pod's line goes with the pod.
type policyTally struct {
	mu      sync.Mutex
	pods    map[string]tallied
	counts  map[string]*policyCounts
	changed map[string]bool
}

func newPolicyTally() *policyTally {
	return &policyTally{pods: map[string]tallied{}, counts: map[string]*policyCounts{}, changed: map[string]bool{}}
}

// note records a pod's line; a pod no policy selects has none.
func (t *policyTally) note(key string, line tallied) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.pods[key]
	if had && old.verdict == line.verdict && old.problem == line.problem && slices.Equal(old.matched, line.matched) {
		return
	}
	if had {
		t.count(old, -1)
		delete(t.pods, key)
	}
	if len(line.matched) > 0 {
		t.pods[key] = line
		t.count(line, 1)
	}
}

// has tells whether policies selected the pod at its last reconcile.
func (t *policyTally) has(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.pods[key]
	return ok
}

// drop removes a pod's line (the pod is gone).
func (t *policyTally) drop(key string) { t.note(key, tallied{}) }

func (t *policyTally) count(line tallied, by int) {
	for _, name := range line.matched {
		c := t.counts[name]
		if c == nil {
			c = &policyCounts{}
			t.counts[name] = c
		}
		c.matched += by
		switch line.verdict {
		case verdictTagged:
			c.tagged += by
		case verdictRefused:
			c.refused += by
		}
		if line.problem != "" {
			c.problems += by
		}
		if c.matched == 0 {
			delete(t.counts, name)
		}
		t.changed[name] = true
	}
}

// countsOf returns a policy's figures and up to limit of its pods'
// problems, "namespace/pod: problem", sorted.
func (t *policyTally) countsOf(policy string, limit int) (policyCounts, []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c policyCounts
	if p := t.counts[policy]; p != nil {
		c = *p
	}
	var problems []string
	if c.problems > 0 {
		for key, line := range t.pods {
			if line.problem != "" && slices.Contains(line.matched, policy) {
				problems = append(problems, key+": "+line.problem)
			}
		}
		slices.Sort(problems)
	}
	return c, problems[:min(limit, len(problems))]
}

// podsOf returns the pods the policy selected when they were last
// reconciled.
func (t *policyTally) podsOf(policy string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for key, line := range t.pods {
		if slices.Contains(line.matched, policy) {
			keys = append(keys, key)
		}
	}
	return keys
}

// podsIn returns the namespace's pods that policies selected.
func (t *policyTally) podsIn(namespace string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for key, line := range t.pods {
		if line.namespace == namespace {
			keys = append(keys, key)
		}
	}
	return keys
}

// takeChanged returns the policies whose figures changed since the last
// call.
func (t *policyTally) takeChanged() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := slices.Sorted(maps.Keys(t.changed))
	clear(t.changed)
	return names
}
