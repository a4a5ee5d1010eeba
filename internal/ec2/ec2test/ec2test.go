// Package ec2test points the operator's EC2 client at an emulator started
// for a test, the way every integration test needs it.
package ec2test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/emulator"
)

// Serve starts an emulator over HTTP for the test's lifetime and returns
// it with its endpoint.
func Serve(t testing.TB, o emulator.Options) (*emulator.Emulator, string) {
	t.Helper()
	emu := emulator.New(o)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return emu, srv.URL
}

// Client returns an EC2 client for endpoint with static test
// credentials, configured by cfg.
func Client(endpoint string, cfg ec2.Config) *ec2.Client {
	return ec2.NewFromAWSConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	}, cfg)
}

// Unlimited is Config.Buckets for a test whose client must not wait for
// tokens: every family gets a bucket far beyond AWS's. The emulator
// enforces AWS's buckets only when its throttling is on.
func Unlimited() map[ec2.Family]ec2.Bucket {
	out := map[ec2.Family]ec2.Bucket{}
	for _, f := range ec2.Families() {
		out[f] = ec2.Bucket{Burst: 100000, Refill: 100000}
	}
	return out
}

// Server serves a handler (an emulator) on a fixed loopback address that
// can be stopped and started again, as an EC2 endpoint that goes away
// and comes back: while stopped, connections are refused.
type Server struct {
	// URL is the endpoint, the same across restarts.
	URL  string
	h    http.Handler
	addr string

	mu  sync.Mutex
	srv *http.Server
}

// ServeRestartable starts h on a loopback port for the test's lifetime.
func ServeRestartable(t testing.TB, h http.Handler) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{h: h, addr: ln.Addr().String()}
	s.URL = "http://" + s.addr
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop closes the listener and every connection: new ones are refused.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

// Start listens on the same address again (waiting a bounded time for
// the port to be free).
func (s *Server) Start(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", s.addr)
		if err == nil {
			s.serve(ln)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarting the endpoint on %s: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetEnv points any AWS SDK in this process at endpoint the standard way
// (AWS_ENDPOINT_URL_EC2, region, static test credentials, no instance
// metadata) for the test's lifetime, as a command started there would find
// EC2.
func SetEnv(t testing.TB, endpoint string) {
	t.Helper()
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_EC2": endpoint, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
}
