package nodeeni

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// metrics are the NodeENI Prometheus collectors. Names are part of the
// documented interface (docs/metrics.md).
type metrics struct {
	managed    prometheus.Gauge       // operator-owned ENIs in the inventory
	attached   prometheus.Gauge       // of which attached
	perNodeENI *prometheus.GaugeVec   // by nodeeni and state: attached, pending, failed
	operations *prometheus.CounterVec // EC2 mutations by operation and result
	cleanups   *prometheus.CounterVec // ENIs removed, by reason and outcome
	untrusted  *prometheus.GaugeVec   // ENIs with the cluster's tag that fail the trust check, by reason
	proven     *prometheus.GaugeVec   // trusted ENIs by the key that signed their proof
	restored   prometheus.Counter     // proofs written again for ENIs their ENINode entry vouches for
	passes     *prometheus.CounterVec // collector passes, by result
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		managed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eni_operator_nodeeni_enis_managed", Help: "Operator-owned ENIs of this cluster in the latest inventory, local changes applied.",
		}),
		attached: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "eni_operator_nodeeni_enis_attached", Help: "Operator-owned ENIs that are attached.",
		}),
		perNodeENI: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eni_operator_nodeeni_enis", Help: "ENIs of each NodeENI by state: attached, pending (being created, attached or removed) and failed (a node cannot get its ENI; see the Degraded condition).",
		}, []string{"nodeeni", "state"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_nodeeni_operations_total", Help: "ENI changes made for NodeENIs, by operation (create, attach, detach, delete, set-*, adopt) and result (success, error).",
		}, []string{"operation", "result"}),
		cleanups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_nodeeni_cleanups_total", Help: "ENIs removed, by reason (NodeDeleted, NodeUnmatched, SubnetRemoved, NodeENIDeleted, DeviceIndexChanged, InstanceReplaced, Duplicate, Orphan) and outcome (deleted, failed; dry-run: would have been deleted).",
		}, []string{"reason", "outcome"}),
		untrusted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eni_operator_nodeeni_untrusted_enis", Help: "ENIs carrying the cluster's ownership tag that fail the trust check (wrong interface type, requester-managed, the pod tagger's tag, ownership tags missing or disagreeing) in the latest inventory, by reason; the operator never changes them.",
		}, []string{"reason"}),
		proven: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eni_operator_nodeeni_proven_enis", Help: "Trusted ENIs in the latest inventory by the key ring's key that signed their ownership proof: after a rotation, an old key may be removed once its count is 0.",
		}, []string{"key"}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "eni_operator_nodeeni_proofs_restored_total", Help: "Ownership proofs written again for ENIs their ENINode entry vouches for, whose proof tag was removed or signed with a key no longer in the key ring (docs/operations.md#ownership-keys).",
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_nodeeni_collector_passes_total", Help: "Passes of the ENI collector over the inventory, one per refresh, by result (success, error): a count that stops growing means leaked ENIs are no longer collected.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.managed, m.attached, m.perNodeENI, m.operations, m.cleanups, m.untrusted, m.proven, m.restored, m.passes)
	}
	return m
}

func (m *metrics) op(kind eniplan.ActionKind, err error) {
	m.operations.WithLabelValues(kind.String(), resultOf(err)).Inc()
}

// resultOf is a metric's result label for an outcome.
func resultOf(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}

// countUntrusted sets the untrusted-ENIs gauge from an inventory and
// returns the untrusted ENIs (ID -> reason) with their details; names maps
// the known NodeENIs' UIDs to their names.
func (m *metrics) countUntrusted(all []awstypes.ENI, t eniplan.TrustCheck, names map[string]string, ev eniplan.Evidence) (map[string]string, map[string]string) {
	_, v := eniplan.SplitTrusted(t, all, func(e awstypes.ENI) awstypes.ENI { return e }, func(e awstypes.ENI) string { return names[e.Tags[eniplan.TagNodeENIUID]] }, ev)
	m.countProven(v.SignedBy, t.Keys)
	count := map[string]int{}
	for _, reason := range v.Reasons {
		count[reason]++
	}
	for _, r := range eniplan.UntrustedReasons {
		m.untrusted.WithLabelValues(r).Set(float64(count[r]))
	}
	return v.Reasons, v.Details
}

// countProven sets the proven-ENIs gauge: every key of the ring is shown,
// 0 included, so a rotation can be watched to its end.
func (m *metrics) countProven(signedBy map[string]string, keys *ownership.KeyRing) {
	count := map[string]int{}
	for _, key := range signedBy {
		count[key]++
	}
	m.proven.Reset()
	for _, id := range keys.IDs() {
		m.proven.WithLabelValues(id).Set(float64(count[id]))
	}
}
