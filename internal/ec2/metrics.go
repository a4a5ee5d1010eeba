package ec2

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the EC2 layer's Prometheus collectors. Names are part of the
// operator's documented interface (README, metrics reference).
type metrics struct {
	calls       *prometheus.CounterVec   // every attempt sent to AWS
	errors      *prometheus.CounterVec   // failed operations, after retries, by code
	throttles   *prometheus.CounterVec   // RequestLimitExceeded answers
	duration    *prometheus.HistogramVec // one operation, retries included
	limiterWait *prometheus.HistogramVec
	rate        prometheus.GaugeFunc
	batchSize   *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, limiter *adaptiveLimiter) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_calls_total", Help: "EC2 API requests sent, retries included, by operation.",
		}, []string{"operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_errors_total", Help: "EC2 operations that failed after retries, by operation and error code.",
		}, []string{"operation", "code"}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "eni_operator_ec2_api_throttles_total", Help: "EC2 requests answered RequestLimitExceeded, by operation.",
		}, []string{"operation"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_api_duration_seconds", Help: "Duration of EC2 operations, retries and rate-limit waits included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"operation"}),
		limiterWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_rate_limiter_wait_seconds", Help: "Time EC2 requests waited for a client-side rate-limit token.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"operation"}),
		rate: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "eni_operator_ec2_rate_limit_qps", Help: "Current client-side EC2 request rate limit (drops on throttling, recovers on success).",
		}, limiter.rate),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "eni_operator_ec2_batch_size", Help: "Items coalesced into one EC2 call, by batch kind.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}, []string{"batch"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.errors, m.throttles, m.duration, m.limiterWait, m.rate, m.batchSize)
	}
	return m
}
