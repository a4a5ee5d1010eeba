package ec2

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Code returns the EC2 error code of err (e.g. "InvalidNetworkInterfaceID.NotFound"),
// or "" when err is not an EC2 API error.
func Code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// IsNotFound reports whether err says a resource does not exist.
func IsNotFound(err error) bool {
	c := Code(err)
	return strings.HasSuffix(c, ".NotFound") || c == "InvalidID"
}

// IsThrottled reports whether AWS refused the call for its rate limit. It
// uses the SDK's list of throttling codes, the one its retryer backs off
// on, so what we count and slow down for is what the SDK retries as
// throttling. EC2 answers RequestLimitExceeded; the list has it, so we
// add no code of our own.
func IsThrottled(err error) bool {
	_, ok := retry.DefaultThrottleErrorCodes[Code(err)]
	return ok
}

// IsRefused reports whether EC2 answered err refusing the call, so it
// was not carried out: a client fault (validation, permission, limit,
// throttling). A server fault, a timeout or a broken connection leave it
// unknown whether the call took effect.
func IsRefused(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
		return true
	}
	return IsThrottled(err)
}

// IsUnauthorized reports whether the caller's IAM policy lacks the action.
func IsUnauthorized(err error) bool {
	switch Code(err) {
	case "UnauthorizedOperation", "AuthFailure", "Blocked":
		return true
	}
	return false
}

// IsInvalid reports whether the request itself was wrong (validation),
// so retrying it unchanged can never succeed.
func IsInvalid(err error) bool {
	c := Code(err)
	switch {
	case strings.HasSuffix(c, ".Malformed"), strings.HasPrefix(c, "InvalidParameter"),
		c == "MissingParameter", c == "TagLimitExceeded", c == "FilterLimitExceeded",
		c == "IdempotentParameterMismatch":
		return true
	}
	return false
}

// IsInUse reports whether the resource is busy (e.g. deleting an attached
// ENI, or an address already taken).
func IsInUse(err error) bool { return strings.HasSuffix(Code(err), ".InUse") }

// IsLimitExceeded reports whether an instance or account limit stopped the
// call (e.g. no more ENIs fit on the instance).
func IsLimitExceeded(err error) bool {
	c := Code(err)
	return strings.HasSuffix(c, "LimitExceeded") && !IsThrottled(err) && c != "FilterLimitExceeded" && c != "TagLimitExceeded"
}

// Message returns EC2's message for err without the transport details
// (request IDs, status codes), so it can go into a status that must not
// change from one identical failure to the next; err.Error() otherwise.
func Message(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	return err.Error()
}

// notFoundError is returned for an item of a batched lookup that AWS did
// not return. It carries an EC2-shaped code so IsNotFound and Code treat it
// like AWS's own.
type notFoundError struct {
	code, id string
}

func (e *notFoundError) Error() string                 { return fmt.Sprintf("%s: %s does not exist", e.code, e.id) }
func (e *notFoundError) ErrorCode() string             { return e.code }
func (e *notFoundError) ErrorMessage() string          { return e.id + " does not exist" }
func (e *notFoundError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }
