package agent

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the agent's Prometheus collectors. Names are part of the
// documented interface (docs/metrics.md).
type metrics struct {
	interfaces *prometheus.GaugeVec   // this node's NodeENI interfaces by state
	operations *prometheus.CounterVec // host changes by operation and result
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		interfaces: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "eni_agent_interfaces", Help: "NodeENI interfaces of this node by state: Configured, Pending (not on the host yet) and Failed (see status.interfaces[].message).",
		}, []string{"state"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_agent_operations_total", Help: "Changes the agent made on the host and in the API, by operation (rename, mtu, up, restore-name, dpdk-bind, dpdk-restore, sriov-write, sriov-reload, status-apply) and result (success, error).",
		}, []string{"operation", "result"}),
	}
	for _, s := range []string{"Configured", "Pending", "Failed"} {
		m.interfaces.WithLabelValues(s).Set(0)
	}
	if reg != nil {
		reg.MustRegister(m.interfaces, m.operations)
	}
	return m
}

func (m *metrics) op(operation string, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.operations.WithLabelValues(operation, result).Inc()
}
