package podaddrs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/phases"
)

// Reasons of the PodAddressesRegistered condition besides the refusals'.
const ReasonRegistered = "Registered"

// nodeReport is where one node stands for one NodeENI.
type nodeReport struct {
	registered int
	refused    []refusal
}

// tally holds, per NodeENI and node, the last pass's report: the
// conditions are written from it, at most every StatusInterval.
type tally struct {
	mu      sync.Mutex
	byNode  map[string]map[string]nodeReport // node -> NodeENI -> report
	changed bool
}

func newTally() *tally { return &tally{byNode: map[string]map[string]nodeReport{}} }

// put records a node's pass and returns the refusals that are new since
// its last one (each is an event once, not once per pass).
func (t *tally) put(node string, reports map[string]nodeReport) []refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byNode[node]
	var fresh []refusal
	for ne, rep := range reports {
		for _, f := range rep.refused {
			if !slices.Contains(old[ne].refused, f) {
				fresh = append(fresh, f)
			}
		}
	}
	if !maps.EqualFunc(old, reports, func(a, b nodeReport) bool { return a.registered == b.registered && slices.Equal(a.refused, b.refused) }) {
		t.changed = true
	}
	t.byNode[node] = reports
	return fresh
}

// markChanged has the next take report, even with nothing new.
func (t *tally) markChanged() {
	t.mu.Lock()
	t.changed = true
	t.mu.Unlock()
}

func (t *tally) forgetNode(node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byNode[node]; ok {
		delete(t.byNode, node)
		t.changed = true
	}
}

// summary is one NodeENI's aggregate over the nodes.
type summary struct {
	registered, nodes int
	refused           []refusal
}

// take returns the NodeENIs' summaries when something changed since the
// last take.
func (t *tally) take() (map[string]summary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.changed {
		return nil, false
	}
	t.changed = false
	out := map[string]summary{}
	for _, reports := range t.byNode {
		for ne, rep := range reports {
			s := out[ne]
			s.registered += rep.registered
			s.nodes++
			s.refused = append(s.refused, rep.refused...)
			out[ne] = s
		}
	}
	return out, true
}

// report records the pass in the tally, says each new refusal in an
// event on its pod, and asks for a retry when a call failed transiently.
func (r *reconciler) report(ctx context.Context, p *pass) *phases.Stop {
	reports := map[string]nodeReport{}
	for _, f := range p.in.Interfaces {
		if f.Registers {
			reports[f.NodeENI] = nodeReport{registered: p.d.Registered[f.NodeENI]}
		}
	}
	for _, f := range p.d.Refused {
		rep := reports[f.NodeENI]
		rep.refused = append(rep.refused, f)
		reports[f.NodeENI] = rep
	}
	// Each address EC2 refused was counted registered by the decision.
	for _, f := range p.done.refused {
		rep := reports[f.NodeENI]
		rep.registered--
		rep.refused = append(rep.refused, f)
		reports[f.NodeENI] = rep
	}
	for _, f := range r.tally.put(p.node, reports) {
		if pod := p.pods[f.Pod]; pod != nil {
			r.recorder.Eventf(pod, nil, corev1.EventTypeWarning, f.Reason, "RegisterAddress", "%s", f.Message)
		}
		log.FromContext(ctx).Info("pod address not registered", "pod", f.Pod, "nodeENI", f.NodeENI, "reason", f.Reason, "message", bounded.Truncate(f.Message, bounded.Message))
	}
	r.waits.wait(p.node, p.d.Taken)
	r.waits.released(p.done.unassigned)
	r.backoffs.released(p.done.unassigned)
	r.backoffs.update(p.node, ec2Refusals(p), claimedOn(p.in.Claims, registeringByMAC(p.in.Interfaces)), p.done.assigned, p.now)
	if p.done.retry {
		return phases.After(retryAfter)
	}
	if _, next := r.backoffs.active(p.node, p.now); !next.IsZero() && next.Sub(p.now) < r.opts.Resync {
		return phases.After(next.Sub(p.now))
	}
	return nil
}

// ec2Refusals are the pass's claims refused on EC2's word: a holder it
// showed, or an assignment it refused.
func ec2Refusals(p *pass) map[claimKey]refusal {
	out := maps.Clone(p.d.EC2Refused)
	if out == nil {
		out = map[claimKey]refusal{}
	}
	for _, f := range p.done.refused {
		out[claimKey{f.Pod, f.Addr}] = f
	}
	return out
}

// statusWriter writes each registering NodeENI's PodAddressesRegistered
// condition from the tally, and removes it from a NodeENI that stopped
// registering. It owns that condition type alone; the optimistic lock
// keeps the NodeENI controller's conditions.
type statusWriter struct {
	client   client.Client
	tally    *tally
	interval time.Duration
	ticks    clock.WithTicker
	gauge    *prometheus.GaugeVec
	// exposed are the NodeENIs with series in gauge.
	exposed map[string]bool
	// off, when set, is the condition of every registering NodeENI: this
	// operator does not register (SetupOff).
	off *metav1.Condition
}

func (w *statusWriter) NeedLeaderElection() bool { return true }

func (w *statusWriter) Start(ctx context.Context) error {
	tick := w.ticks.NewTicker(w.interval)
	defer tick.Stop()
	w.tally.markChanged()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
		sums, changed := w.tally.take()
		if !changed && !w.exposedGone(ctx) && w.off == nil {
			continue
		}
		if err := w.writeAll(ctx, sums); err != nil {
			log.FromContext(ctx).Error(err, "writing the NodeENIs' PodAddressesRegistered condition; trying again")
			w.tally.markChanged()
		}
	}
}

// exposedGone reports whether a NodeENI with series in the gauge is gone:
// its deletion changes no node's tally once its ENIs are gone.
func (w *statusWriter) exposedGone(ctx context.Context) bool {
	if len(w.exposed) == 0 {
		return false
	}
	var list v1alpha1.NodeENIList
	if err := w.client.List(ctx, &list); err != nil {
		return false
	}
	present := 0
	for _, ne := range list.Items {
		if w.exposed[ne.Name] {
			present++
		}
	}
	return present < len(w.exposed)
}

func (w *statusWriter) writeAll(ctx context.Context, sums map[string]summary) error {
	var list v1alpha1.NodeENIList
	if err := w.client.List(ctx, &list); err != nil {
		return err
	}
	var firstErr error
	exposed := map[string]bool{}
	for i := range list.Items {
		ne := &list.Items[i]
		old := ne.DeepCopy()
		if !registersAddresses(ne) {
			meta.RemoveStatusCondition(&ne.Status.Conditions, v1alpha1.ConditionPodAddressesRegistered)
		} else {
			var c metav1.Condition
			if w.off != nil {
				c = *w.off
			} else {
				sum := sums[ne.Name]
				w.gauge.WithLabelValues(ne.Name, "registered").Set(float64(sum.registered))
				w.gauge.WithLabelValues(ne.Name, "refused").Set(float64(len(sum.refused)))
				exposed[ne.Name] = true
				c = conditionOf(sum)
			}
			c.ObservedGeneration = ne.Generation
			meta.SetStatusCondition(&ne.Status.Conditions, c)
		}
		if slices.EqualFunc(old.Status.Conditions, ne.Status.Conditions, func(a, b metav1.Condition) bool { return a == b }) {
			continue
		}
		if err := w.client.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// A NodeENI deleted or no longer registering takes its series along.
	for name := range w.exposed {
		if !exposed[name] {
			w.gauge.DeletePartialMatch(prometheus.Labels{"nodeeni": name})
		}
	}
	w.exposed = exposed
	return firstErr
}

// conditionOf says a NodeENI's registration in one condition: True with
// the count, or False with the first refusals and what to do.
func conditionOf(s summary) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionPodAddressesRegistered, Status: metav1.ConditionTrue, Reason: ReasonRegistered,
		Message: fmt.Sprintf("Multus pod addresses registered: %d, on the ENIs of %d nodes", s.registered, s.nodes)}
	if len(s.refused) == 0 {
		return c
	}
	slices.SortFunc(s.refused, func(a, b refusal) int { return strings.Compare(a.Pod+a.Message, b.Pod+b.Message) })
	var parts []string
	for _, f := range s.refused[:min(3, len(s.refused))] {
		parts = append(parts, fmt.Sprintf("pod %s: %s", f.Pod, f.Message))
	}
	c.Status, c.Reason = metav1.ConditionFalse, s.refused[0].Reason
	c.Message = bounded.Truncate(fmt.Sprintf("pod addresses not registered: %d (registered: %d): %s", len(s.refused), s.registered, strings.Join(parts, "; ")), bounded.Message)
	return c
}
