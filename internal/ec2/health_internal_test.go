package ec2

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestFailureKind(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	resp := func(status int, code string) error {
		var err error = &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: errors.New("answer")}}
		if code != "" {
			err = &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: &smithy.GenericAPIError{Code: code}}}
		}
		return err
	}
	for _, tc := range []struct {
		name, op string
		ctx      context.Context
		err      error
		want     string
	}{
		{"success", "DescribeNetworkInterfaces", nil, nil, ""},
		{"dns", "DescribeNetworkInterfaces", nil, &smithyhttp.RequestSendError{Err: &net.DNSError{Err: "no such host", Name: "ec2.example", IsNotFound: true}}, KindUnreachable},
		{"refused", "CreateTags", nil, &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Err: errors.New("connect: connection refused")}}, KindUnreachable},
		{"deadline", "DescribeNetworkInterfaces", nil, fmt.Errorf("request: %w", context.DeadlineExceeded), KindUnreachable},
		{"caller cancelled", "DescribeNetworkInterfaces", canceled, &smithyhttp.RequestSendError{Err: context.Canceled}, kindIgnored},
		{"no credentials", "DescribeNetworkInterfaces", nil, fmt.Errorf("get identity: %w", resp(400, "InvalidIdentityToken")), KindAuth},
		{"signing", "DescribeNetworkInterfaces", nil, &v4.SigningError{Err: errors.New("failed to retrieve credentials")}, KindAuth},
		{"AuthFailure", "CreateTags", nil, resp(401, "AuthFailure"), KindAuth},
		{"ExpiredToken", "DescribeInstances", nil, resp(400, "ExpiredToken"), KindAuth},
		{"SignatureDoesNotMatch", "DescribeInstances", nil, resp(403, "SignatureDoesNotMatch"), KindAuth},
		{"InvalidClientTokenId", "DescribeInstances", nil, resp(403, "InvalidClientTokenId"), KindAuth},
		{"unauthorized read", "DescribeSubnets", nil, resp(403, "UnauthorizedOperation"), KindAuth},
		{"unauthorized change", "CreateNetworkInterface", nil, resp(403, "UnauthorizedOperation"), ""},
		{"throttled", "DescribeNetworkInterfaces", nil, resp(503, "RequestLimitExceeded"), KindThrottled},
		{"internal", "DescribeNetworkInterfaces", nil, resp(500, "InternalError"), KindServer},
		{"bad gateway", "DescribeNetworkInterfaces", nil, resp(502, ""), KindServer},
		{"not found", "DescribeNetworkInterfaces", nil, resp(400, "InvalidNetworkInterfaceID.NotFound"), ""},
		{"dry run", "CreateTags", nil, resp(412, "DryRunOperation"), ""},
	} {
		ctx := tc.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if got := failureKind(ctx, tc.op, tc.err); got != tc.want {
			t.Errorf("%s: kind %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Down is a matter of how long failures have lasted with no success,
// not of how many there were; a success clears it; a negative threshold
// never sets it.
func TestHealthThreshold(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	h := newHealth(Config{Logger: logr.Discard(), UnreadyAfter: time.Minute, ErrorLogInterval: time.Second, Clock: clk}, "ec2.test")
	fail := func() { h.observe(KindUnreachable, "DescribeNetworkInterfaces", "", errors.New("refused")) }

	fail()
	if h.Check(nil) != nil || h.up() != 0 {
		t.Fatal("unready at the first failure")
	}
	clk.Step(59 * time.Second)
	fail()
	if h.Check(nil) != nil {
		t.Fatal("unready before the threshold")
	}
	clk.Step(time.Second)
	if err := h.Check(nil); err == nil {
		t.Fatal("ready after a minute of failures")
	} else if s := h.Status(); s.Failures != 2 || s.Last.Endpoint != "ec2.test" {
		t.Errorf("status %+v: want 2 failures on the configured endpoint", s)
	}
	h.observe(KindThrottled, "DescribeNetworkInterfaces", "", errors.New("throttled"))
	if h.Check(nil) == nil {
		t.Error("throttling cleared the failures")
	}
	h.observe("", "DescribeNetworkInterfaces", "", nil)
	if h.Check(nil) != nil || h.up() != 1 || h.lastSuccessSeconds() != float64(clk.Now().Unix()) {
		t.Error("a success did not clear the failures")
	}

	off := newHealth(Config{Logger: logr.Discard(), UnreadyAfter: -1, ErrorLogInterval: time.Second, Clock: clk}, "ec2.test")
	off.observe(KindAuth, "DescribeNetworkInterfaces", "", errors.New("AuthFailure"))
	clk.Step(time.Hour)
	if off.Check(nil) != nil || off.Status().Down {
		t.Error("a negative threshold still fails readiness")
	}
}

func TestUnreadyAfterFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"--ec2-unready-after=30s"}, 30 * time.Second},
		{[]string{"--ec2-unready-after=0"}, -1},
	} {
		var c Config
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c.BindFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if c.UnreadyAfter != tc.want {
			t.Errorf("%v: UnreadyAfter %v, want %v", tc.args, c.UnreadyAfter, tc.want)
		}
		if got := withDefaults(c).UnreadyAfter; got != tc.want {
			t.Errorf("%v: after defaults %v, want %v", tc.args, got, tc.want)
		}
	}
	if withDefaults(Config{}).UnreadyAfter != time.Minute {
		t.Error("the zero Config does not mean the 1m default")
	}
}
