package ec2conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// inProcessDetachDelay is how long a detached ENI stays "detaching" in the
// emulators this suite starts itself.
const inProcessDetachDelay = 300 * time.Millisecond

// target is an EC2 endpoint the tests talk to.
type target struct {
	endpoint  string
	region    string
	inProcess bool
	// admin is the emulator's admin API; nil when the endpoint has none.
	admin *emulator.AdminClient
	nets  *netAllocator
	http  *http.Client
}

// suite is the shared endpoint, set once by TestMain.
var suite *target

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	region := firstNonEmpty(os.Getenv("EC2_REGION"), os.Getenv("AWS_REGION"), "us-east-1")
	tg := &target{region: region, nets: newNetAllocator(), http: newHTTPClient()}
	if ep := os.Getenv("EC2_ENDPOINT"); ep != "" {
		tg.endpoint = strings.TrimSuffix(ep, "/")
		admin := emulator.NewAdminClient(tg.endpoint)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := admin.Healthz(ctx)
		cancel()
		mode := "no admin API: emulator-only tests skip"
		if err == nil {
			tg.admin = admin
			mode = "admin API found"
		}
		fmt.Printf("ec2conformance: endpoint %s, region %s (%s)\n", tg.endpoint, region, mode)
	} else {
		srv := httptest.NewServer(emulator.New(emulator.Options{Region: region, DetachDelay: inProcessDetachDelay}))
		defer srv.Close()
		tg.endpoint, tg.inProcess, tg.admin = srv.URL, true, emulator.NewAdminClient(srv.URL)
	}
	suite = tg
	return m.Run()
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// client returns an EC2 client for the target with SDK retries off, so
// every error code reaches the test as EC2 answered it.
func (tg *target) client(optFns ...func(*ec2.Options)) *ec2.Client {
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	if !tg.inProcess && os.Getenv("AWS_ACCESS_KEY_ID") != "" {
		creds = credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"),
			os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	}
	cfg := aws.Config{
		Region:       tg.region,
		Credentials:  creds,
		BaseEndpoint: aws.String(tg.endpoint),
		Retryer:      func() aws.Retryer { return aws.NopRetryer{} },
		HTTPClient:   tg.http,
	}
	return ec2.NewFromConfig(cfg, optFns...)
}

// newHTTPClient returns the HTTP client of the suite's EC2 clients: the
// standard transport, with request bodies read into memory first.
//
// Why: smithy-go wraps a request body in a "safe" reader whose WriteTo
// returns io.EOF once closed, and closes it as soon as client.Do returns.
// net/http sends headers and body of a body it does not know as in-memory
// straight to the socket, then reads the body once more to check its
// length. A server as fast as a local emulator answers in between; the
// SDK closes the body, that last read fails with io.EOF, and the transport
// closes the connection under the response being read: about 1 call in
// 50 fails with "deserialization failed ... use of closed network
// connection" (with retries on, the SDK silently repeats it). A body in
// memory is sent in one write after it was read whole, so the race is gone.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: bufferedBodies{next: http.DefaultTransport.(*http.Transport).Clone()}}
}

// bufferedBodies is a RoundTripper that reads each request body into
// memory before handing the request on.
type bufferedBodies struct{ next http.RoundTripper }

func (b bufferedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return b.next.RoundTrip(r)
	}
	data, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return b.next.RoundTrip(r)
}

// requireAdmin skips the test when the target has no emulator admin API.
func requireAdmin(t *testing.T, tg *target) *emulator.AdminClient {
	t.Helper()
	if tg.admin == nil {
		t.Skipf("%s has no emulator admin API (GET %shealthz failed): this test needs an emulator", tg.endpoint, emulator.AdminPrefix)
	}
	return tg.admin
}

// isolated returns a target whose emulator configuration the test may
// change. In-process, that is a fresh emulator of its own and the test runs
// in parallel (isolated calls t.Parallel: the caller must not). Against an
// external endpoint it is the shared emulator: the test stays serial (Go
// runs serial tests before any parallel one resumes) and the configuration
// is put back to the defaults afterwards. Without an admin API the test
// is skipped.
func isolated(t *testing.T) *target {
	t.Helper()
	if suite.inProcess {
		t.Parallel()
		srv := httptest.NewServer(emulator.New(emulator.Options{Region: suite.region, DetachDelay: inProcessDetachDelay}))
		t.Cleanup(srv.Close)
		return &target{endpoint: srv.URL, region: suite.region, inProcess: true,
			admin: emulator.NewAdminClient(srv.URL), nets: suite.nets, http: suite.http}
	}
	requireAdmin(t, suite)
	t.Cleanup(func() { restoreConfig(t, suite) })
	restoreConfig(t, suite) // start from the defaults too
	return suite
}

// restoreConfig puts throttling, faults, buckets, denied actions, the
// tag, attach and delete delays and ClientToken idempotency back to their
// defaults (empty sets clear them).
func restoreConfig(t *testing.T, tg *target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	off := &emulator.Duration{}
	c := emulator.Config{Throttling: aws.Bool(false), Faults: map[string]emulator.Fault{}, Buckets: map[string]emulator.Bucket{}, Denied: []string{},
		TagDelay: off, AttachDelay: off, DeleteDelay: off, IgnoreClientToken: aws.Bool(false)}
	if err := requireAdmin(t, tg).Configure(ctx, c); err != nil {
		t.Fatalf("restoring the emulator configuration: %v", err)
	}
}

// configure changes the emulator configuration or fails the test.
func configure(t *testing.T, tg *target, c emulator.Config) {
	t.Helper()
	if err := requireAdmin(t, tg).Configure(t.Context(), c); err != nil {
		t.Fatalf("configuring the emulator: %v", err)
	}
}

// netAllocator hands out distinct /20 blocks in 10.64.0.0–10.255.255.255,
// one per world. Distinct blocks keep tests independent even on an endpoint
// that (wrongly) shares one address space between VPCs, and the random
// start keeps reruns against one long-lived endpoint apart.
type netAllocator struct{ next atomic.Uint32 }

const netBlocks = (256 - 64) * 16

func newNetAllocator() *netAllocator {
	a := &netAllocator{}
	a.next.Store(rand.Uint32N(netBlocks))
	return a
}

// block returns a fresh /20 and its number.
func (a *netAllocator) block() (netip.Prefix, uint32) {
	k := a.next.Add(1) % netBlocks
	addr := netip.AddrFrom4([4]byte{10, byte(64 + k/16), byte((k % 16) * 16), 0})
	return netip.PrefixFrom(addr, 20), k
}

// --- errors -------------------------------------------------------------

// requireAPIError fails the test unless err is an EC2 error with the code,
// and, when status is not 0, that HTTP status.
func requireAPIError(t *testing.T, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("call succeeded, want error %s", code)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v is not an EC2 API error, want %s", err, code)
	}
	if apiErr.ErrorCode() != code {
		t.Fatalf("error code %s (%s), want %s", apiErr.ErrorCode(), apiErr.ErrorMessage(), code)
	}
	if status != 0 {
		if got := httpStatus(err); got != status {
			t.Fatalf("%s answered with HTTP %d, want %d", code, got, status)
		}
	}
}

// errorCode returns the EC2 error code of err, "" when there is none.
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func noErr(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// waitFor polls cond until it returns true or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// errOf is the error of a call whose result a test does not read.
func errOf[T any](_ T, err error) error { return err }
