// Package ec2 is the only part of the operator that talks to EC2. It owns
// rate limiting (AWS-shaped token buckets that back off adaptively),
// retries, request batching, the ENI inventory and the EC2 metrics, and it
// hands the rest of the operator plain Go types, never SDK types.
package ec2

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Config tunes the EC2 layer. The zero value of every field but VPCID
// means the documented default.
type Config struct {
	// VPCID scopes every lookup to the cluster's VPC. When empty, New asks
	// the instance metadata service; off EC2 it must be set.
	VPCID string
	// QPS and Burst bound the request rate of this client
	// (--aws-rate-limit-qps, --aws-rate-limit-burst; defaults 10 and 20).
	// They are a ceiling: on throttling the rate drops and then recovers.
	QPS   float64
	Burst int
	// CategoryLimits optionally adds a bucket per action category on top
	// of the global one, mirroring AWS's own per-action buckets.
	CategoryLimits map[Category]Limit
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
}

// Limit is a token bucket: QPS refill per second, Burst tokens.
type Limit struct {
	QPS   float64
	Burst int
}

// Category groups EC2 actions the way AWS's throttling does.
type Category string

// The action categories of AWS's request throttling.
const (
	CategoryDescribe    Category = "describe"   // non-mutating
	CategoryTags        Category = "tags"       // CreateTags, DeleteTags
	CategoryENIMutate   Category = "eni-mutate" // Create/DeleteNetworkInterface, Modify..., Assign/Unassign...
	CategoryOtherMutate Category = "other-mutate"
)

func categoryOf(operation string) Category {
	switch operation {
	case "CreateTags", "DeleteTags":
		return CategoryTags
	case "CreateNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute",
		"AssignPrivateIpAddresses", "UnassignPrivateIpAddresses":
		return CategoryENIMutate
	}
	if len(operation) >= 8 && operation[:8] == "Describe" {
		return CategoryDescribe
	}
	return CategoryOtherMutate
}

// Batch size limits of the EC2 API.
const (
	// maxFilterValues is EC2's limit of filter values per call; one of them
	// goes to the vpc-id filter.
	maxFilterValues = 200
	maxLookupBatch  = maxFilterValues - 1
	maxTagResources = 1000
	pageSize        = 1000
)

// Client is the operator's EC2 client. It is safe for concurrent use.
type Client struct {
	api     *ec2.Client
	vpcID   string
	limiter *adaptiveLimiter
	byCat   map[Category]*adaptiveLimiter
	metrics *metrics
	health  *Health

	lookups   *batcher[ipFamily, string, ENI]
	enisByID  *batcher[string, string, ENI]
	instances *batcher[string, string, Instance]
	createTag *batcher[string, string, struct{}]
	deleteTag *batcher[string, string, struct{}]
}

// New builds a client from the standard AWS configuration chain (IRSA, Pod
// Identity, instance profile, environment), which also honours
// AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL and AWS_REGION.
func New(ctx context.Context, cfg Config) (*Client, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		region, rerr := discoverRegion(ctx, imds.NewFromConfig(awsCfg))
		if rerr != nil {
			return nil, errors.New("no AWS region: set AWS_REGION (instance metadata is not reachable to discover it)")
		}
		awsCfg.Region = region
	}
	if cfg.VPCID == "" {
		vpc, verr := discoverVPC(ctx, imds.NewFromConfig(awsCfg))
		if verr != nil {
			return nil, fmt.Errorf("no VPC ID: set --vpc-id (instance metadata could not tell it: %w)", verr)
		}
		cfg.VPCID = vpc
	}
	return NewFromAWSConfig(awsCfg, cfg), nil
}

// metadataTimeout bounds each instance metadata query: off EC2 the
// service never answers, and start-up must not hang on it.
const metadataTimeout = 3 * time.Second

func discoverRegion(ctx context.Context, md *imds.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	out, err := md.GetRegion(ctx, &imds.GetRegionInput{})
	if err != nil {
		return "", err
	}
	return out.Region, nil
}

// discoverVPC reads this instance's VPC from the metadata service.
func discoverVPC(ctx context.Context, md *imds.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	mac, err := readMetadata(ctx, md, "mac")
	if err != nil {
		return "", err
	}
	return readMetadata(ctx, md, "network/interfaces/macs/"+mac+"/vpc-id")
}

func readMetadata(ctx context.Context, md *imds.Client, path string) (string, error) {
	out, err := md.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer out.Content.Close()
	var b [256]byte
	n, _ := out.Content.Read(b[:])
	return string(b[:n]), nil
}

// NewFromAWSConfig builds a client from an already loaded AWS configuration.
func NewFromAWSConfig(awsCfg aws.Config, cfg Config) *Client {
	cfg = withDefaults(cfg)
	c := &Client{vpcID: cfg.VPCID, limiter: newAdaptiveLimiter(cfg.QPS, cfg.Burst), byCat: map[Category]*adaptiveLimiter{}}
	for cat, l := range cfg.CategoryLimits {
		c.byCat[cat] = newAdaptiveLimiter(l.QPS, l.Burst)
	}
	c.health = newHealth(cfg.Logger, defaultEndpoint(awsCfg), cfg.UnreadyAfter, cfg.ErrorLogInterval)
	c.metrics = newMetrics(cfg.Registerer, c.limiter, c.health)
	awsCfg.HTTPClient = withBufferedBodies(awsCfg.HTTPClient)
	c.api = ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
		// The only retry layer: the SDK's standard retryer with our
		// attempts and backoff, and without its retry quota, which would
		// fail calls outright under sustained throttling.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = cfg.MaxAttempts
			so.MaxBackoff = cfg.MaxBackoff
			so.RateLimiter = ratelimit.None
		})
		o.APIOptions = append(o.APIOptions, c.instrument)
	})
	c.initBatchers(cfg)
	return c
}

// withDefaults fills the zero fields from DefaultConfig (the flags'
// defaults), for callers that build a Config in Go.
func withDefaults(cfg Config) Config {
	d := DefaultConfig()
	if cfg.QPS <= 0 {
		cfg.QPS = d.QPS
	}
	if cfg.Burst <= 0 {
		cfg.Burst = d.Burst
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = d.MaxAttempts
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = d.MaxBackoff
	}
	if cfg.BatchIdle <= 0 {
		cfg.BatchIdle = d.BatchIdle
	}
	if cfg.TagBatchIdle <= 0 {
		cfg.TagBatchIdle = d.TagBatchIdle
	}
	if cfg.TagBatchMaxWait <= 0 {
		cfg.TagBatchMaxWait = d.TagBatchMaxWait
	}
	if cfg.BatchMaxWait <= 0 {
		cfg.BatchMaxWait = d.BatchMaxWait
	}
	if cfg.UnreadyAfter == 0 {
		cfg.UnreadyAfter = defaultUnreadyAfter
	}
	if cfg.ErrorLogInterval <= 0 {
		cfg.ErrorLogInterval = defaultErrorLogInterval
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = ctrllog.Log.WithName("ec2")
	}
	return cfg
}

// defaultEndpoint names the EC2 endpoint for log lines about attempts
// that failed before the request had its URL (credentials).
func defaultEndpoint(awsCfg aws.Config) string {
	if awsCfg.BaseEndpoint != nil && *awsCfg.BaseEndpoint != "" {
		return *awsCfg.BaseEndpoint
	}
	return "ec2." + awsCfg.Region + ".amazonaws.com"
}

// VPCID returns the VPC every lookup is scoped to.
func (c *Client) VPCID() string { return c.vpcID }

// instrument adds rate limiting and metrics to every operation: per
// operation (duration, final errors) around the retry loop, and per
// attempt (token wait, calls, throttles) inside it.
func (c *Client) instrument(stack *middleware.Stack) error {
	op := middleware.InitializeMiddlewareFunc("eni-operator/operation", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		name := awsmiddleware.GetOperationName(ctx)
		start := time.Now()
		out, md, err := next.HandleInitialize(ctx, in)
		c.metrics.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
		if err != nil {
			code := Code(err)
			if code == "" {
				code = "client"
			}
			c.metrics.errors.WithLabelValues(name, code).Inc()
		}
		return out, md, err
	})
	attempt := middleware.FinalizeMiddlewareFunc("eni-operator/attempt", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		name := awsmiddleware.GetOperationName(ctx)
		limiters := []*adaptiveLimiter{c.limiter}
		if l, ok := c.byCat[categoryOf(name)]; ok {
			limiters = append(limiters, l)
		}
		var waited time.Duration
		for _, l := range limiters {
			d, err := l.wait(ctx)
			waited += d
			if err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("waiting for the EC2 rate limiter: %w", err)
			}
		}
		c.metrics.limiterWait.WithLabelValues(name).Observe(waited.Seconds())
		c.metrics.calls.WithLabelValues(name).Inc()
		out, md, err := next.HandleFinalize(ctx, in)
		now := time.Now()
		for _, l := range limiters {
			if IsThrottled(err) {
				l.throttled(now)
			} else if err == nil {
				l.succeeded(now)
			}
		}
		if IsThrottled(err) {
			c.metrics.throttles.WithLabelValues(name).Inc()
		}
		// Every attempt tells EC2's health, so an outage shows within
		// the first failed attempt rather than after the retries.
		kind := failureKind(ctx, name, err)
		if kind != "" && kind != kindIgnored {
			c.metrics.attemptErrors.WithLabelValues(name, kind).Inc()
		}
		c.health.observe(kind, name, requestHost(in.Request), err)
		return out, md, err
	})
	if err := stack.Initialize.Add(op, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(attempt, "Retry", middleware.After)
}

// requestHost is the host an attempt went to ("" before the endpoint was
// resolved).
func requestHost(req any) string {
	if r, ok := req.(*smithyhttp.Request); ok && r.URL != nil {
		return r.URL.Host
	}
	return ""
}
