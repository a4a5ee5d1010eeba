package tagger

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	// notFoundFirstRetry and notFoundMaxRetry bound how long a pod whose
	// IP no ENI holds waits before its next lookup.
	notFoundFirstRetry = 30 * time.Second
	notFoundMaxRetry   = 10 * time.Minute
	// missRefreshMaxAge is how old the ENI inventory may be before a
	// lookup that missed refreshes it: misses of many pods at once, or
	// of the same pods again and again, share one refresh per period.
	missRefreshMaxAge = 30 * time.Second
)

// notFoundRetry is when a pod whose IP no ENI holds is looked up again,
// given how long it has been so: 30s at first, then half that time, at
// most 10m. An IP that is late (a branch ENI being created, EC2's eventual
// consistency) is found within 30s; one the VPC never held (an overlay
// network's) stops costing a lookup every 30s. An update of the pod (a
// new IP) brings it back at once whatever the wait.
func notFoundRetry(missingFor time.Duration) time.Duration {
	return min(max(notFoundFirstRetry, missingFor/2), notFoundMaxRetry)
}

// missingFor is how long the pod's condition has said ENINotFound (0 when
// it does not).
func missingFor(pod *corev1.Pod, now time.Time) time.Duration {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionType && c.Reason == ReasonENINotFound && !c.LastTransitionTime.IsZero() {
			return now.Sub(c.LastTransitionTime.Time)
		}
	}
	return 0
}
