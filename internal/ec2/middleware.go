package ec2

import (
	"context"
	"fmt"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// instrument adds rate limiting and metrics to every operation: per
// operation (duration, final errors) around the retry loop, and per
// attempt (token wait, calls, throttles, health) inside it, so that every
// retry waits for a token and counts.
func (c *Client) instrument(stack *middleware.Stack) error {
	op := middleware.InitializeMiddlewareFunc("eni-operator/operation", c.measureOperation)
	attempt := middleware.FinalizeMiddlewareFunc("eni-operator/attempt", c.limitAndObserveAttempt)
	if err := stack.Initialize.Add(op, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(attempt, "Retry", middleware.After)
}

// measureOperation records one operation's duration and, when it failed
// after its retries, its error code.
func (c *Client) measureOperation(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
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
}

// limitAndObserveAttempt waits for the rate limiters, sends one attempt
// and tells the limiters, the metrics and EC2's health how it went.
func (c *Client) limitAndObserveAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	name := awsmiddleware.GetOperationName(ctx)
	limiters := c.limitersFor(name)
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
	c.adapt(limiters, name, err)
	// Every attempt tells EC2's health, so an outage shows within the
	// first failed attempt rather than after the retries.
	kind := failureKind(ctx, name, err)
	if kind != "" && kind != kindIgnored {
		c.metrics.attemptErrors.WithLabelValues(name, kind).Inc()
	}
	c.health.observe(kind, name, requestHost(in.Request), err)
	return out, md, err
}

// limitersFor returns the global limiter and the operation's category
// limiter, when one is configured.
func (c *Client) limitersFor(operation string) []*adaptiveLimiter {
	limiters := []*adaptiveLimiter{c.limiter}
	if l, ok := c.byCat[categoryOf(operation)]; ok {
		limiters = append(limiters, l)
	}
	return limiters
}

// adapt slows the limiters down on throttling and lets them recover on
// success; other errors say nothing of the rate.
func (c *Client) adapt(limiters []*adaptiveLimiter, operation string, err error) {
	now := time.Now()
	throttled := IsThrottled(err)
	for _, l := range limiters {
		if throttled {
			l.throttled(now)
		} else if err == nil {
			l.succeeded(now)
		}
	}
	if throttled {
		c.metrics.throttles.WithLabelValues(operation).Inc()
	}
}

// requestHost is the host an attempt went to ("" before the endpoint was
// resolved).
func requestHost(req any) string {
	if r, ok := req.(*smithyhttp.Request); ok && r.URL != nil {
		return r.URL.Host
	}
	return ""
}
