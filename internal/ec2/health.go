package ec2

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Kinds of failed EC2 attempts (label kind of
// eni_operator_ec2_attempt_errors_total).
const (
	// KindUnreachable: no answer from EC2 (connection refused or reset,
	// DNS, timeouts, TLS).
	KindUnreachable = "unreachable"
	// KindAuth: EC2 refused who we are (AuthFailure, an expired or unknown
	// key, a bad signature, UnauthorizedOperation on a read), or no
	// credentials could be had to sign the request.
	KindAuth = "auth"
	// KindThrottled: RequestLimitExceeded. EC2 answered: it does not count
	// against EC2's health (the adaptive rate limiter deals with it).
	KindThrottled = "throttled"
	// KindServer: EC2 answered 5xx (InternalError, Unavailable, ...).
	KindServer = "server"
)

// Defaults of the health tracking.
const (
	defaultUnreadyAfter     = time.Minute
	defaultErrorLogInterval = 10 * time.Second
)

// Health is what the operator knows of EC2 from its own calls: every
// attempt the SDK makes, retries included, is recorded. An attempt that
// EC2 answered (with a result or with an error about the request itself,
// such as NotFound) is a success; one that got no answer, or an
// authentication or server error, is a failure. Throttling is neither.
//
// A failure is logged at once, at most once per kind every
// Config.ErrorLogInterval (the lines in between are counted in the next
// one). After Config.UnreadyAfter of failures with no success, Check
// (the /readyz check) fails and OnChange listeners are told; the first
// success after that clears both.
//
// Health only knows of calls this process makes: with leader election,
// replicas that do not lead make none and stay healthy.
type Health struct {
	log          logr.Logger
	endpoint     string // the configured endpoint, when a request does not tell
	unreadyAfter time.Duration
	logEvery     time.Duration
	clock        clock.WithDelayedExecution

	mu           sync.Mutex
	lastSuccess  time.Time
	failingSince time.Time // first failed attempt since the last success; zero when not failing
	failures     int       // failed attempts since failingSince
	last         Failure
	down         bool // listeners were told EC2 is down
	timer        clock.Timer
	logged       map[string]time.Time // kind -> last log line
	streakLogged bool                 // a line told of the current failures
	suppressed   map[string]int       // kind -> failures not logged since
	listeners    []func(down bool)
}

// Failure is one failed EC2 attempt.
type Failure struct {
	Kind      string
	Operation string
	Endpoint  string
	Err       error
	At        time.Time
}

func (f Failure) String() string {
	if f.Err == nil {
		return ""
	}
	return fmt.Sprintf("%s %s on %s: %v", f.Kind, f.Operation, f.Endpoint, f.Err)
}

// HealthStatus is a snapshot of Health.
type HealthStatus struct {
	// Down is true when EC2 calls have failed for UnreadyAfter or longer
	// with no success in between (never when UnreadyAfter is negative).
	Down bool
	// FailingSince is the first failed attempt since the last success
	// (zero when the latest conclusive attempt succeeded).
	FailingSince time.Time
	// Failures counts the failed attempts since FailingSince.
	Failures int
	// Last is the latest failed attempt (zero Err when none).
	Last Failure
	// LastSuccess is the latest successful attempt (zero before one).
	LastSuccess time.Time
	// UnreadyAfter is the threshold Down uses.
	UnreadyAfter time.Duration
}

func newHealth(cfg Config, endpoint string) *Health {
	return &Health{log: cfg.Logger, endpoint: endpoint, unreadyAfter: cfg.UnreadyAfter, logEvery: cfg.ErrorLogInterval, clock: cfg.Clock,
		logged: map[string]time.Time{}, suppressed: map[string]int{}}
}

// Health returns the client's record of EC2's health.
func (c *Client) Health() *Health { return c.health }

// OnChange registers f to be told when EC2 is found down (true) and when
// it answers again (false). f runs on the goroutine that noticed the
// change and must not block.
func (h *Health) OnChange(f func(down bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listeners = append(h.listeners, f)
}

// Status returns the current state.
func (h *Health) Status() HealthStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statusLocked(h.clock.Now())
}

func (h *Health) statusLocked(now time.Time) HealthStatus {
	s := HealthStatus{FailingSince: h.failingSince, Failures: h.failures, Last: h.last, LastSuccess: h.lastSuccess, UnreadyAfter: h.unreadyAfter}
	s.Down = h.unreadyAfter > 0 && !h.failingSince.IsZero() && now.Sub(h.failingSince) >= h.unreadyAfter
	return s
}

// Check is the readiness check (a controller-runtime healthz.Checker):
// it fails while Status says EC2 is down.
func (h *Health) Check(_ *http.Request) error {
	s := h.Status()
	if !s.Down {
		return nil
	}
	return fmt.Errorf("no successful EC2 call since %s (%d failed attempts, threshold %s); last error: %s",
		s.FailingSince.UTC().Format(time.RFC3339), s.Failures, s.UnreadyAfter, s.Last)
}

// up is the eni_operator_ec2_up gauge: 0 while the latest conclusive
// attempt failed.
func (h *Health) up() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failingSince.IsZero() {
		return 1
	}
	return 0
}

// lastSuccessSeconds is the eni_operator_ec2_last_success_timestamp_seconds
// gauge (0 before the first success).
func (h *Health) lastSuccessSeconds() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastSuccess.IsZero() {
		return 0
	}
	return float64(h.lastSuccess.UnixNano()) / 1e9
}

// observe records one attempt's outcome; kind is failureKind(ctx, err).
func (h *Health) observe(kind, operation, endpoint string, err error) {
	switch kind {
	case "":
		h.succeeded()
	case KindThrottled, kindIgnored:
	default:
		if endpoint == "" {
			endpoint = h.endpoint
		}
		h.failed(Failure{Kind: kind, Operation: operation, Endpoint: endpoint, Err: err, At: h.clock.Now()})
	}
}

func (h *Health) succeeded() {
	h.mu.Lock()
	now := h.clock.Now()
	h.lastSuccess = now
	if h.failingSince.IsZero() {
		h.mu.Unlock()
		return
	}
	since, failures, wasDown, logged := h.failingSince, h.failures, h.down, h.streakLogged
	h.failingSince, h.failures, h.down, h.streakLogged = time.Time{}, 0, false, false
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	listeners := h.listeners
	h.mu.Unlock()
	// The rate limit of failure lines holds across short streaks: a
	// flapping endpoint gets one line per kind per interval, and a
	// recovery line only for streaks that were told of.
	if logged || wasDown {
		h.log.Info("EC2 answers again", "failedFor", now.Sub(since).Round(time.Millisecond).String(), "failedAttempts", failures)
	}
	if wasDown {
		for _, f := range listeners {
			f(false)
		}
	}
}

func (h *Health) failed(f Failure) {
	h.mu.Lock()
	if h.failingSince.IsZero() {
		h.failingSince = f.At
		if h.unreadyAfter > 0 {
			h.timer = h.clock.AfterFunc(h.unreadyAfter, h.expireLater)
		}
	}
	h.failures++
	h.last = f
	since, failures := h.failingSince, h.failures
	logIt := h.logged[f.Kind].IsZero() || f.At.Sub(h.logged[f.Kind]) >= h.logEvery
	suppressed := h.suppressed[f.Kind]
	if logIt {
		h.logged[f.Kind] = f.At
		h.suppressed[f.Kind] = 0
		h.streakLogged = true
	} else {
		h.suppressed[f.Kind]++
	}
	h.mu.Unlock()
	if logIt {
		h.log.Error(f.Err, "EC2 request failed", "kind", f.Kind, "action", f.Operation, "endpoint", f.Endpoint,
			"failingFor", f.At.Sub(since).Round(time.Millisecond).String(), "failedAttempts", failures,
			"notLoggedSinceLastLine", suppressed, "hint", hintFor(f.Kind))
	}
}

// expireLater runs expire off the clock's goroutine: a fake clock calls
// it while holding its own lock, which expire's clock.Now would wait on.
func (h *Health) expireLater() { go h.expire() }

// expire runs UnreadyAfter after the first failure of a streak: if no
// attempt succeeded since, EC2 is down.
func (h *Health) expire() {
	h.mu.Lock()
	now := h.clock.Now()
	s := h.statusLocked(now)
	if !s.Down || h.down {
		if !s.FailingSince.IsZero() && !s.Down && h.unreadyAfter > 0 {
			// A clock that lags the timer: look again when it is due.
			h.timer = h.clock.AfterFunc(s.FailingSince.Add(h.unreadyAfter).Sub(now), h.expireLater)
		}
		h.mu.Unlock()
		return
	}
	h.down = true
	listeners := h.listeners
	h.mu.Unlock()
	h.log.Error(s.Last.Err, "EC2 unreachable: /readyz fails until an EC2 call succeeds",
		"failingFor", now.Sub(s.FailingSince).Round(time.Millisecond).String(), "failedAttempts", s.Failures,
		"lastKind", s.Last.Kind, "lastAction", s.Last.Operation, "endpoint", s.Last.Endpoint, "hint", hintFor(s.Last.Kind))
	for _, f := range listeners {
		f(true)
	}
}

func hintFor(kind string) string {
	switch kind {
	case KindUnreachable:
		return "check the network path to the EC2 endpoint (DNS, security groups, NAT or VPC endpoint, proxy, AWS_ENDPOINT_URL_EC2)"
	case KindAuth:
		return "check the operator's AWS credentials (IRSA or Pod Identity role, its trust policy, the clock) and its IAM policy"
	case KindServer:
		return "EC2 answers with server errors: check the AWS Health Dashboard for the region"
	}
	return ""
}

// kindIgnored is an attempt that says nothing of EC2: the caller gave up.
const kindIgnored = "ignored"

// isAuthCode reports whether EC2 refused the caller itself rather than
// one request. UnauthorizedOperation is such a code only on reads: on a
// change it names an action the policy lacks, and EC2 did answer.
func isAuthCode(code string) bool {
	switch code {
	case "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
		"ExpiredToken", "ExpiredTokenException", "RequestExpired",
		"IncompleteSignature", "MissingAuthenticationToken", "InvalidAccessKeyId",
		"UnrecognizedClientException", "AccessDenied", "AccessDeniedException",
		"OptInRequired", "Blocked", "PendingVerification":
		return true
	}
	return false
}

// isServerCode reports whether code is one of EC2's server-side errors.
func isServerCode(code string) bool {
	switch code {
	case "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable":
		return true
	}
	return false
}

// failureKind classifies one attempt's outcome: "" when EC2 answered
// (success, or an error about the request), a Kind* otherwise, or
// kindIgnored when the caller cancelled.
func failureKind(ctx context.Context, operation string, err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return kindIgnored
	}
	// Credentials are resolved before the request is sent; their errors
	// may wrap another service's answer (STS), so they come first.
	var signing *v4.SigningError
	if errors.As(err, &signing) || strings.HasPrefix(err.Error(), "get identity:") {
		return KindAuth
	}
	var send *smithyhttp.RequestSendError
	if errors.As(err, &send) {
		return KindUnreachable
	}
	if code := Code(err); code != "" {
		switch {
		case IsThrottled(err):
			return KindThrottled
		case isAuthCode(code), code == "UnauthorizedOperation" && isDescribe(operation):
			return KindAuth
		case isServerCode(code):
			return KindServer
		}
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		if status.HTTPStatusCode() >= 500 {
			return KindServer
		}
		return "" // EC2 answered about the request
	}
	if Code(err) != "" {
		return ""
	}
	// No answer at all: a deadline, a dial or read that failed.
	return KindUnreachable
}

// bindHealthFlags registers the flags of EC2 health tracking.
func (c *Config) bindHealthFlags(fs *flag.FlagSet) {
	c.UnreadyAfter = defaultUnreadyAfter
	fs.Var(offDuration{&c.UnreadyAfter}, "ec2-unready-after",
		"after this long with EC2 calls failing (unreachable, authentication or server errors) and none succeeding, /readyz fails and NodeENI Ready conditions turn Unknown (EC2Unreachable); 0 turns both off")
}

// offDuration is a duration flag where 0 means off, stored as a
// negative duration (zero in Config means the default).
type offDuration struct{ d *time.Duration }

func (o offDuration) String() string {
	if o.d == nil {
		return defaultUnreadyAfter.String()
	}
	if *o.d < 0 {
		return "0s"
	}
	return o.d.String()
}

func (o offDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	if d == 0 {
		d = -1
	}
	*o.d = d
	return nil
}
