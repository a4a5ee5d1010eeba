package nodeeni

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the NodeENI Prometheus collectors. Names are part of the
// documented interface (README).
type metrics struct {
	managed    prometheus.Gauge       // operator-owned ENIs in the inventory
	attached   prometheus.Gauge       // of which attached
	perNodeENI *prometheus.GaugeVec   // by nodeeni and state: attached, pending, failed
	operations *prometheus.CounterVec // EC2 mutations by operation and result
	cleanups   *prometheus.CounterVec // ENIs removed, by reason and outcome
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
			Name: "eni_operator_nodeeni_operations_total", Help: "ENI changes made for NodeENIs, by operation (create, attach, detach, delete, set-*) and result (success, error).",
		}, []string{"operation", "result"}),
		cleanups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_nodeeni_cleanups_total", Help: "ENIs removed, by reason (NodeDeleted, NodeUnmatched, SubnetRemoved, NodeENIDeleted, DeviceIndexChanged, InstanceReplaced, Duplicate, Orphan) and outcome (deleted, failed).",
		}, []string{"reason", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.managed, m.attached, m.perNodeENI, m.operations, m.cleanups)
	}
	return m
}

func (m *metrics) op(kind actionKind, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.operations.WithLabelValues(kind.String(), result).Inc()
}
