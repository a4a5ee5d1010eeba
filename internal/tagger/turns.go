package tagger

import (
	"time"

	"golang.org/x/time/rate"
)

// writesPerConclusion are the Kubernetes writes that conclude a tagging:
// the pod's last-applied annotations and its condition.
const writesPerConclusion = 2

// turnSlack is the wait for the Kubernetes budget a reconcile takes on
// itself rather than coming back later.
const turnSlack = time.Second

// turns hands out the pods' turns at the Kubernetes budget once their
// tags are written. A burst of new pods writes EC2 far faster than
// --kube-api-qps lets their records follow; a reconcile that waited for
// its turn would hold a worker the next pods' EC2 writes need, and the
// tags of a 10,000-pod burst would land at the budget's pace. So a
// reconcile whose turn is later comes back then: its tags are on the
// ENI and in the ledger, and that reconcile, with nothing to write to
// EC2, writes the record and the condition.
type turns struct {
	budget *rate.Limiter // nil: not paced
}

func newTurns(qps float64, burst int) turns {
	if qps <= 0 {
		return turns{}
	}
	return turns{budget: rate.NewLimiter(rate.Limit(qps/writesPerConclusion), max(1, burst/writesPerConclusion))}
}

// wait reserves a conclusion's turn at now and returns how long the pod
// should wait for it: 0 when it may conclude at once.
func (t turns) wait(now time.Time) time.Duration {
	if t.budget == nil {
		return 0
	}
	if d := t.budget.ReserveN(now, 1).DelayFrom(now); d > turnSlack {
		return d
	}
	return 0
}
