package ec2

import (
	"cmp"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Config tunes the EC2 layer. The zero value of every field but VPCID
// means the documented default.
type Config struct {
	// VPCID scopes every lookup to the cluster's VPC. When empty, New asks
	// the instance metadata service; off EC2 it must be set.
	VPCID string
	// Share is the part of the account's EC2 request buckets this client
	// may use (--aws-rate-limit-share; (0, 1], default 1). Each action
	// gets a bucket with the burst and refill rate AWS gives its family
	// (Family) times Share; a family backs off on throttling of any of
	// its actions and recovers while calls succeed. Below 1 leaves room
	// for the other tools that share the account's buckets.
	Share float64
	// Buckets replace AWS's bucket of a family (before Share): for an
	// account whose limits AWS raised, or an endpoint that enforces none
	// (tests against the emulator with its throttling off).
	Buckets map[Family]Bucket
	// QPS and Burst are an optional overall ceiling over every family
	// (--aws-rate-limit-qps, --aws-rate-limit-burst), as
	// k8s-eni-tagger's single limiter was. QPS 0, the default, sets none;
	// Burst (default 20) applies only with QPS.
	QPS   float64
	Burst int
	// MaxAttempts bounds the attempts of one operation (default 10).
	// Throttling, 5xx and network errors are retried with exponential
	// backoff and full jitter; other errors are returned at once.
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (default 20s).
	MaxBackoff time.Duration
	// BatchIdle and BatchMaxWait bound how long a request waits for others
	// to share its call (defaults 20ms and 200ms).
	BatchIdle    time.Duration
	BatchMaxWait time.Duration
	// TagBatchIdle and TagBatchMaxWait are the same for CreateTags and
	// DeleteTags, which nobody waits on interactively and which gain the
	// most from coalescing (replicas share tag sets), so they wait longer.
	TagBatchIdle    time.Duration
	TagBatchMaxWait time.Duration
	// Registerer receives the metrics; nil leaves them unregistered. The
	// operator passes controller-runtime's registry.
	Registerer prometheus.Registerer
	// UnreadyAfter is how long EC2 calls may fail (no answer, an
	// authentication or a server error) with none succeeding before
	// Health says EC2 is down: /readyz fails and NodeENI Ready conditions
	// turn Unknown (--ec2-unready-after; default 1m, negative: never).
	UnreadyAfter time.Duration
	// ErrorLogInterval bounds the log lines of failed attempts to one per
	// kind of failure per interval (default 10s).
	ErrorLogInterval time.Duration
	// Logger receives the EC2 health log lines (default:
	// controller-runtime's logger, named "ec2").
	Logger logr.Logger
	// WriteGate, when set, is asked right before each attempt of a call
	// that changes something (every action but Describe*): an error
	// refuses the attempt unsent, and the call fails with it. The operator
	// gates on still holding its leader election Lease, so a replica that
	// lost it (paused past the lease duration) changes nothing.
	WriteGate func() error
	// Clock times the state's refreshes, the ages of what it holds, the
	// expiry of recent writes and EC2's health (default: the real clock);
	// tests step a fake one.
	Clock clock.WithTickerAndDelayedExecution
	// PacingClock runs what paces requests in flight: the rate limiters,
	// the batch windows and the calls' durations (default: the real
	// clock). Apart from Clock, so a test can step the state's refreshes
	// while its calls go at their own pace. The SDK's retry backoff runs
	// on the real clock.
	PacingClock clock.WithDelayedExecution
}

// withDefaults fills the zero fields from DefaultConfig (the flags'
// defaults), for callers that build a Config in Go.
func withDefaults(cfg Config) Config {
	d := DefaultConfig()
	orDefault(&cfg.Share, d.Share)
	orDefault(&cfg.Burst, d.Burst)
	orDefault(&cfg.MaxAttempts, d.MaxAttempts)
	orDefault(&cfg.MaxBackoff, d.MaxBackoff)
	orDefault(&cfg.BatchIdle, d.BatchIdle)
	orDefault(&cfg.BatchMaxWait, d.BatchMaxWait)
	orDefault(&cfg.TagBatchIdle, d.TagBatchIdle)
	orDefault(&cfg.TagBatchMaxWait, d.TagBatchMaxWait)
	orDefault(&cfg.ErrorLogInterval, defaultErrorLogInterval)
	if cfg.UnreadyAfter == 0 { // negative is "never", not unset
		cfg.UnreadyAfter = defaultUnreadyAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.PacingClock == nil {
		cfg.PacingClock = clock.RealClock{}
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = ctrllog.Log.WithName("ec2")
	}
	return cfg
}

// orDefault replaces a zero or negative *v with d.
func orDefault[T cmp.Ordered](v *T, d T) {
	var zero T
	if *v <= zero {
		*v = d
	}
}
