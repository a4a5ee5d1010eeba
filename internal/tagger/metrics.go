package tagger

import "github.com/prometheus/client_golang/prometheus"

// metrics of the tagger; every name starts with eni_operator_tagger_.
type metrics struct {
	reconciles *prometheus.CounterVec // by result
	duration   prometheus.Histogram   // per reconcile
	outcomes   *prometheus.CounterVec // by condition reason
	resolved   *prometheus.CounterVec // ENI resolution: hit (by source) / miss
	ledgerSize prometheus.GaugeFunc   // pods with tags applied
	ledgerOps  *prometheus.CounterVec // ConfigMap writes / overflowed records
	writes     *prometheus.CounterVec // tag writes by kind
	drift      prometheus.Counter     // pods whose ENI drifted
	shardBytes *prometheus.GaugeVec   // bytes per ledger shard
}

func newMetrics(reg prometheus.Registerer, ledger *Ledger) *metrics {
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eni_operator_tagger_reconciles_total",
			Help: "Pod reconciles by result (success, error, requeue)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "eni_operator_tagger_reconcile_duration_seconds",
			Help: "Time one pod reconcile took, AWS and Kubernetes calls included.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eni_operator_tagger_pod_outcomes_total",
			Help: "Pod reconcile outcomes by condition reason (Synced, InvalidTags, Conflict, SharedENI, ...)."}, []string{"reason"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eni_operator_tagger_eni_cache_total",
			Help: "ENI resolutions by result: hit (answered from the ledger or the inventory) or miss (an EC2 lookup was needed)."}, []string{"result"}),
		ledgerSize: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "eni_operator_tagger_cache_entries",
			Help: "Pods with tags applied, as recorded in the ledger (cache) ConfigMaps."}, func() float64 { return float64(ledger.Len()) }),
		ledgerOps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eni_operator_tagger_cache_writes_total",
			Help: "Ledger ConfigMap writes (result=written) and records that did not fit a shard (result=overflow)."}, []string{"result"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "eni_operator_tagger_tag_writes_total",
			Help: "Tag writes requested by pods (before batching) by kind: create, delete, cleanup."}, []string{"kind"}),
		drift: prometheus.NewCounter(prometheus.CounterOpts{Name: "eni_operator_tagger_drift_detected_total",
			Help: "Pods requeued because an inventory refresh showed their ENI's tags changed behind the operator's back."}),
		shardBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "eni_operator_tagger_cache_shard_bytes",
			Help: "Bytes of data in each ledger ConfigMap shard (the API server limit is 1 MiB)."}, []string{"shard"}),
	}
	if reg != nil {
		reg.MustRegister(m.reconciles, m.duration, m.outcomes, m.resolved, m.ledgerSize, m.ledgerOps, m.writes, m.drift, m.shardBytes)
	}
	return m
}
