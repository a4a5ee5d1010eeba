// Package ec2 is the only part of the operator that talks to EC2. It owns
// rate limiting (AWS-shaped token buckets that back off adaptively),
// retries, request batching, the ENI inventory and the EC2 metrics, and it
// hands the rest of the operator plain Go types, never SDK types.
package ec2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Client is the operator's EC2 client. It is safe for concurrent use.
type Client struct {
	api     *ec2.Client
	vpcID   string
	limits  limits
	metrics *metrics
	health  *Health
	// writeGate is Config.WriteGate.
	writeGate func() error
	// createRetryer retries CreateNetworkInterface (createRetryables).
	createRetryer aws.Retryer
	clock         clock.WithTickerAndDelayedExecution
	pacing        clock.WithDelayedExecution // Config.PacingClock

	// One batcher per batched EC2 call (batch_*.go).
	enisByIP        *batcher[ipFamily, string, awstypes.ENI]
	enisByID        *batcher[noKey, string, awstypes.ENI]
	instancesByID   *batcher[noKey, string, Instance]
	createTagsBatch *batcher[tagSet, string, struct{}]
	deleteTagsBatch *batcher[tagSet, string, struct{}]
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

// NewFromAWSConfig builds a client from an already loaded AWS configuration.
func NewFromAWSConfig(awsCfg aws.Config, cfg Config) *Client {
	cfg = withDefaults(cfg)
	c := &Client{vpcID: cfg.VPCID, limits: newLimits(cfg), writeGate: cfg.WriteGate, clock: cfg.Clock, pacing: cfg.PacingClock}
	c.health = newHealth(cfg, defaultEndpoint(awsCfg))
	c.metrics = newMetrics(cfg.Registerer, c.limits, c.health)
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
	c.createRetryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = cfg.MaxAttempts
		so.MaxBackoff = cfg.MaxBackoff
		so.RateLimiter = ratelimit.None
		so.Retryables = []retry.IsErrorRetryable{createRetryables()}
	})
	c.initBatchers(cfg)
	return c
}

// createRetryables retries a CreateNetworkInterface only when EC2 cannot
// have carried it out: throttled, or never sent. A retry of a create that
// timed out or failed inside EC2 could make a second ENI with the same
// nonce where EC2 does not honour the ClientToken (after its idempotency
// window), and two ENIs showing one nonce are both left alone; the caller
// tries again with a new nonce instead.
func createRetryables() retry.IsErrorRetryable {
	throttles := retry.IsErrorThrottles(retry.DefaultThrottles)
	return retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
		var op *net.OpError
		if throttles.IsErrorThrottle(err) == aws.TrueTernary || errors.As(err, &op) && op.Op == "dial" {
			return aws.TrueTernary
		}
		return aws.FalseTernary
	})
}

// initBatchers wires one batcher per batched call. Reads have a caller
// waiting, so they wait briefly for company; tag writes have none and gain
// the most from coalescing (replicas share tag sets), so they wait longer.
func (c *Client) initBatchers(cfg Config) {
	reads := batchWindow{idle: cfg.BatchIdle, maxWait: cfg.BatchMaxWait}
	tagWrites := batchWindow{idle: cfg.TagBatchIdle, maxWait: cfg.TagBatchMaxWait}
	c.enisByIP = newDescribeENIsByIPBatcher(c, reads)
	c.enisByID = newDescribeENIsByIDBatcher(c, reads)
	c.instancesByID = newDescribeInstancesBatcher(c, reads)
	c.createTagsBatch = newCreateTagsBatcher(c, tagWrites)
	c.deleteTagsBatch = newDeleteTagsBatcher(c, tagWrites)
}

// batchWindow is how long a request waits for others to share its call.
type batchWindow struct{ idle, maxWait time.Duration }

// batchTimeout bounds one batched call, retries included.
const batchTimeout = 2 * time.Minute

// batchedCall is the call a batcher makes: the batch-size metric's kind,
// the EC2 action, and the most items one call takes.
type batchedCall struct {
	kind, action string
	maxItems     int
}

// newBatcher returns a batcher with what every batch of the client shares:
// a due batch stays open while the rate limiter would hold its call, an
// action of its family, anyway (so under a rate limit batches grow
// instead of queueing; other actions' backlogs do not hold it), and the
// size of each call goes to eni_operator_ec2_batch_size under its kind.
// Batched calls are filtered, so a describe's family is FamilyDescribe.
func newBatcher[K, I comparable, O any](c *Client, call batchedCall, w batchWindow,
	run func(context.Context, K, []I) (map[I]O, error)) *batcher[K, I, O] {
	action := call.action
	size := c.metrics.batchSize.WithLabelValues(call.kind)
	family := familyOf(action, nil)
	return &batcher[K, I, O]{
		idle: w.idle, maxWait: w.maxWait, maxItems: call.maxItems, timeout: batchTimeout,
		run: run, gate: func() time.Duration { return c.limits.delay(family, action) },
		take:    func(ctx context.Context) error { return c.waitForToken(ctx, family, action) },
		observe: func(n int) { size.Observe(float64(n)) },
		clock:   c.pacing,
	}
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
