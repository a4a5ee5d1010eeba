package ec2

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestErrorClasses(t *testing.T) {
	apiErr := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }
	for _, tc := range []struct {
		err                                         error
		throttled, limitExceeded, notFound, invalid bool
	}{
		{err: nil},
		{err: errors.New("dial tcp: connection refused")},
		{err: apiErr("RequestLimitExceeded"), throttled: true},
		{err: fmt.Errorf("wrapped: %w", apiErr("RequestLimitExceeded")), throttled: true},
		{err: apiErr("Throttling"), throttled: true},
		{err: apiErr("ThrottlingException"), throttled: true},
		{err: apiErr("EC2ThrottledException"), throttled: true},
		{err: apiErr("AttachmentLimitExceeded"), limitExceeded: true},
		{err: apiErr("NetworkInterfaceLimitExceeded"), limitExceeded: true},
		{err: apiErr("FilterLimitExceeded"), invalid: true},
		{err: apiErr("TagLimitExceeded"), invalid: true},
		{err: apiErr("InvalidNetworkInterfaceID.NotFound"), notFound: true},
		{err: apiErr("InvalidID"), notFound: true},
		{err: apiErr("InvalidParameterValue"), invalid: true},
		{err: &notFoundError{code: "InvalidInstanceID.NotFound", id: "i-1"}, notFound: true},
	} {
		name := fmt.Sprint(tc.err)
		if got := IsThrottled(tc.err); got != tc.throttled {
			t.Errorf("IsThrottled(%s) = %v", name, got)
		}
		if got := IsLimitExceeded(tc.err); got != tc.limitExceeded {
			t.Errorf("IsLimitExceeded(%s) = %v", name, got)
		}
		if got := IsNotFound(tc.err); got != tc.notFound {
			t.Errorf("IsNotFound(%s) = %v", name, got)
		}
		if got := IsInvalid(tc.err); got != tc.invalid {
			t.Errorf("IsInvalid(%s) = %v", name, got)
		}
	}
}

func TestMessageDropsTransportDetails(t *testing.T) {
	err := fmt.Errorf("operation error EC2: CreateTags, https response error StatusCode: 400, RequestID: 1234, api error %w",
		&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "bad tag"})
	if got, want := Message(err), "InvalidParameterValue: bad tag"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got, want := Message(errors.New("plain")), "plain"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
}
