package ec2

import (
	"context"
	"errors"
	"fmt"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// instrument adds rate limiting and metrics to every operation: per
// operation (its family, duration, final errors) around the retry loop,
// and per attempt (token wait, calls, throttles, health) inside it, so
// that every retry waits for a token and counts.
func (c *Client) instrument(stack *middleware.Stack) error {
	op := middleware.InitializeMiddlewareFunc("eni-operator/operation", c.measureOperation)
	attempt := middleware.FinalizeMiddlewareFunc("eni-operator/attempt", c.limitAndObserveAttempt)
	if err := stack.Initialize.Add(op, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(attempt, "Retry", middleware.After)
}

// familyKey carries an operation's Family from the initialize step, the
// last that sees the operation's input (a describe's family depends on
// its filters and pagination), to every attempt.
type familyKey struct{}

// measureOperation decides the operation's family, and records its
// duration and, when it failed after its retries, its error code.
func (c *Client) measureOperation(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	name := awsmiddleware.GetOperationName(ctx)
	ctx = middleware.WithStackValue(ctx, familyKey{}, familyOf(name, in.Parameters))
	start := c.pacing.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	c.metrics.duration.WithLabelValues(name).Observe(c.pacing.Since(start).Seconds())
	if err != nil {
		code := Code(err)
		if code == "" {
			code = "client"
		}
		c.metrics.errors.WithLabelValues(name, code).Inc()
	}
	return out, md, plainSendError(err)
}

// noAnswerError says that EC2 never answered. The SDK's own words for it,
// "https response error StatusCode: 0", read as an HTTPS answer whatever
// the endpoint's scheme.
type noAnswerError struct{ send *smithyhttp.RequestSendError }

func (e *noAnswerError) Error() string { return "no answer from EC2: " + e.send.Err.Error() }
func (e *noAnswerError) Unwrap() error { return e.send }

func plainSendError(err error) error {
	var send *smithyhttp.RequestSendError
	if err == nil || !errors.As(err, &send) {
		return err
	}
	return &noAnswerError{send: send}
}

// limitAndObserveAttempt waits for the rate limiters of the operation's
// family, sends one attempt and tells the family's limiter, the metrics
// and EC2's health how it went.
func (c *Client) limitAndObserveAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	name := awsmiddleware.GetOperationName(ctx)
	family, ok := middleware.GetStackValue(ctx, familyKey{}).(Family)
	if !ok { // not through measureOperation: decide from the name alone
		family = familyOf(name, nil)
	}
	if !spendPrepaidToken(ctx) { // a batch's token was taken (and its wait observed) by its batcher
		if err := c.waitForToken(ctx, family, name); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("waiting for the EC2 rate limiter: %w", err)
		}
	}
	// Asked after the limiter's wait, the last moment before sending.
	if c.writeGate != nil && !isDescribe(name) {
		if err := c.writeGate(); err != nil {
			return middleware.FinalizeOutput{}, middleware.Metadata{}, fmt.Errorf("%s not sent: %w", name, err)
		}
	}
	c.metrics.calls.WithLabelValues(name).Inc()
	out, md, err := next.HandleFinalize(ctx, in)
	c.adapt(family, name, err)
	// Every attempt tells EC2's health, so an outage shows within the
	// first failed attempt rather than after the retries.
	kind := failureKind(ctx, name, err)
	if kind != "" && kind != kindIgnored {
		c.metrics.attemptErrors.WithLabelValues(name, kind).Inc()
	}
	c.health.observe(kind, name, requestHost(in.Request), err)
	return out, md, err
}

// waitForToken takes a token of the action's bucket in its family (and
// of the ceiling) and observes how long that took.
func (c *Client) waitForToken(ctx context.Context, family Family, action string) error {
	waited, err := c.limits.wait(ctx, family, action)
	if err != nil {
		return err
	}
	c.metrics.limiterWait.WithLabelValues(action, string(family)).Observe(waited.Seconds())
	return nil
}

// adapt slows the family's limiter down on throttling and lets it
// recover on success; other errors say nothing of the rate, and other
// families' buckets are AWS's own, untouched by this one's throttling.
func (c *Client) adapt(family Family, operation string, err error) {
	l := c.limits.family[family]
	switch {
	case IsThrottled(err):
		l.throttled(c.pacing.Now())
		c.metrics.throttles.WithLabelValues(operation, string(family)).Inc()
	case err == nil:
		l.succeeded(c.pacing.Now())
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
