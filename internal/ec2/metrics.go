package ec2

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the EC2 layer's Prometheus collectors. Names are part of the
// operator's documented interface (docs/metrics.md).
type metrics struct {
	calls       *prometheus.CounterVec   // every attempt sent to AWS
	errors      *prometheus.CounterVec   // failed operations, after retries, by code
	throttles   *prometheus.CounterVec   // RequestLimitExceeded answers
	duration    *prometheus.HistogramVec // one operation, retries included
	limiterWait *prometheus.HistogramVec
	batchSize   *prometheus.HistogramVec
	// EC2's health (health.go): every attempt counts, retries included.
	attemptErrors *prometheus.CounterVec // failed attempts by kind
	up            prometheus.GaugeFunc
	lastSuccess   prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, lim limits, health *Health) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_calls_total", Help: "EC2 API requests sent, retries included, by operation.",
		}, []string{"operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_errors_total", Help: "EC2 operations that failed after retries, by operation and error code.",
		}, []string{"operation", "code"}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_throttles_total", Help: "EC2 requests answered RequestLimitExceeded, by operation and throttling family.",
		}, []string{"operation", "family"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_api_duration_seconds", Help: "Duration of EC2 operations, retries and rate-limit waits included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"operation"}),
		limiterWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_rate_limiter_wait_seconds", Help: "Time EC2 requests waited for client-side rate-limit tokens (their family's and the overall ceiling's), by operation and throttling family.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"operation", "family"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_batch_size", Help: "Items coalesced into one EC2 call, by batch kind.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}, []string{"batch"}),
		attemptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_attempt_errors_total", Help: "Failed EC2 attempts, retries included, by operation and kind: unreachable (no answer), auth, throttled, server (5xx).",
		}, []string{"operation", "kind"}),
		up: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "eni_operator_ec2_up", Help: "1 unless the latest EC2 attempt that said anything of EC2's health failed (no answer, an authentication or a server error).",
		}, health.up),
		lastSuccess: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "eni_operator_ec2_last_success_timestamp_seconds", Help: "Unix time of the latest EC2 attempt EC2 answered (0 before one).",
		}, health.lastSuccessSeconds),
	}
	var rates []prometheus.Collector // one gauge per family, the family a constant label
	for _, f := range Families() {
		rates = append(rates, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "eni_operator_ec2_rate_limit_qps", Help: "Current client-side refill rate of each EC2 action's bucket in a throttling family (AWS's times --aws-rate-limit-share; drops on throttling in that family, recovers on success).",
			ConstLabels: prometheus.Labels{"family": string(f)},
		}, lim.family[f].rate))
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.errors, m.throttles, m.duration, m.limiterWait, m.batchSize, m.attemptErrors, m.up, m.lastSuccess)
		reg.MustRegister(rates...)
	}
	return m
}
