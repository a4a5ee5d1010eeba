package ec2_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// logLines captures a logger's lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

// matching returns the lines containing every one of subs.
func (l *logLines) matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// waitUntil polls cond, failing the test after a bounded wait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An EC2 endpoint that goes away is logged at its first failed attempt
// (once for all the retries of a burst), flips eni_operator_ec2_up to 0,
// fails the readiness check after the threshold, and all of it clears
// when the endpoint is back.
func TestHealthEndpointStoppedAndRestarted(t *testing.T) {
	emu := emulator.New(emulator.Options{})
	res, err := emu.Load(emulator.World{VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.ServeRestartable(t, emu)
	var logs logLines
	reg := prometheus.NewRegistry()
	c := testenv.EC2Client(srv.URL, ec2.Config{VPCID: res.VPCs[0], Registerer: reg, Logger: logs.logger(),
		MaxAttempts: 4, MaxBackoff: 5 * time.Millisecond, UnreadyAfter: 300 * time.Millisecond, ErrorLogInterval: time.Hour})
	h := c.Health()
	downs := make(chan bool, 10)
	h.OnChange(func(down bool) { downs <- down })
	ctx := context.Background()
	up := func() float64 { return gauge(t, reg, "eni_operator_ec2_up") }

	if _, err := c.ListENIs(ctx); err != nil {
		t.Fatal(err)
	}
	if up() != 1 || gauge(t, reg, "eni_operator_ec2_last_success_timestamp_seconds") <= 0 || h.Check(nil) != nil {
		t.Fatalf("after a success: up %v, readiness %v", up(), h.Check(nil))
	}

	srv.Down()
	if _, err := c.ListENIs(ctx); err == nil {
		t.Fatal("a call to a stopped endpoint succeeded")
	} else if msg := err.Error(); !strings.Contains(msg, "no answer from EC2: ") || strings.Contains(msg, "StatusCode: 0") {
		t.Errorf("the error of a stopped http:// endpoint reads %q; want it to say no answer came", msg)
	}
	// Four attempts, each seen; one log line for them (one per kind per
	// ErrorLogInterval), naming the action, the endpoint and the cause.
	if n := attemptErrors(t, reg, "DescribeNetworkInterfaces", "unreachable"); n != 4 {
		t.Errorf("unreachable attempts counted: %v, want 4 (every retry)", n)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	// (The first attempt may find its kept-alive connection closed: EOF;
	// the others are refused.)
	failed := logs.matching("EC2 request failed", `"kind"="unreachable"`, `"action"="DescribeNetworkInterfaces"`, `"endpoint"="`+host+`"`, "request send failed")
	if len(failed) != 1 {
		t.Errorf("log lines of the failed attempts: %d, want 1 (rate-limited); all lines:\n%s", len(failed), strings.Join(logs.matching(""), "\n"))
	}
	if up() != 0 {
		t.Errorf("eni_operator_ec2_up = %v after failed attempts, want 0", up())
	}
	// Calls keep failing: after the threshold, readiness fails and
	// listeners hear of it.
	waitUntil(t, "the readiness check to fail", func() bool {
		_, _ = c.ListENIs(ctx)
		return h.Check(nil) != nil
	})
	if err := h.Check(nil); !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "DescribeNetworkInterfaces") {
		t.Errorf("readiness error does not name the last failure: %v", err)
	}
	if d := <-downs; !d {
		t.Error("listeners were told up, want down")
	}
	// What EC2 being down means for NodeENIs is the NodeENI controller's
	// to say, and only when it runs.
	if lines := logs.matching("NodeENI"); len(lines) > 0 {
		t.Errorf("the EC2 client speaks of NodeENIs: %s", strings.Join(lines, "\n"))
	}
	if len(logs.matching("EC2 unreachable", "/readyz")) != 1 {
		t.Error("no single log line says EC2 is unreachable past the threshold")
	}
	if len(logs.matching("EC2 request failed")) != 1 {
		t.Error("more than one line for the failed attempts within ErrorLogInterval")
	}

	srv.Up(t)
	if _, err := c.ListENIs(ctx); err != nil {
		t.Fatal(err)
	}
	if up() != 1 || h.Check(nil) != nil {
		t.Errorf("after the endpoint is back: up %v, readiness %v", up(), h.Check(nil))
	}
	if d := <-downs; d {
		t.Error("listeners were told down, want up")
	}
	if len(logs.matching("EC2 answers again")) != 1 {
		t.Error("no log line says EC2 answers again")
	}
	t.Logf("log:\n%s", strings.Join(logs.matching(""), "\n"))
}

// Authentication errors count as failures (and are not retried);
// UnauthorizedOperation only on reads; throttling and errors about the
// request are EC2 answering.
func TestHealthAuthErrors(t *testing.T) {
	emu, url := testenv.Serve(t, emulator.Options{})
	res, err := emu.Load(emulator.World{VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}}})
	if err != nil {
		t.Fatal(err)
	}
	var logs logLines
	reg := prometheus.NewRegistry()
	c := testenv.EC2Client(url, ec2.Config{VPCID: res.VPCs[0], Registerer: reg, Logger: logs.logger(),
		MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond, UnreadyAfter: time.Hour, ErrorLogInterval: time.Hour})
	ctx := context.Background()
	fault := func(action, code string) {
		t.Helper()
		if err := emu.Configure(emulator.Config{Faults: map[string]emulator.Fault{action: {ErrorRate: 1, ErrorCode: code}}}); err != nil {
			t.Fatal(err)
		}
	}
	up := func() float64 { return gauge(t, reg, "eni_operator_ec2_up") }

	fault("DescribeNetworkInterfaces", "UnauthorizedOperation")
	if _, err := c.ListENIs(ctx); err == nil {
		t.Fatal("want an error")
	}
	if up() != 0 || attemptErrors(t, reg, "DescribeNetworkInterfaces", "auth") != 1 {
		t.Errorf("UnauthorizedOperation on a read: up %v, auth errors %v; want 0 and 1", up(), attemptErrors(t, reg, "DescribeNetworkInterfaces", "auth"))
	}
	if len(logs.matching("EC2 request failed", `"kind"="auth"`, "UnauthorizedOperation")) != 1 {
		t.Error("the auth failure is not logged")
	}

	fault("DescribeNetworkInterfaces", "InvalidNetworkInterfaceID.NotFound")
	_, _ = c.ListENIs(ctx)
	if up() != 1 {
		t.Error("an error about the request did not count as EC2 answering")
	}
	fault("DeleteNetworkInterface", "UnauthorizedOperation")
	_ = c.DeleteENI(ctx, "eni-0123456789abcdef0")
	if up() != 1 {
		t.Error("UnauthorizedOperation on a change (a missing IAM action) counted as EC2 being unreachable")
	}
	fault("DescribeNetworkInterfaces", "RequestLimitExceeded")
	_, _ = c.ListENIs(ctx)
	if up() != 1 || attemptErrors(t, reg, "DescribeNetworkInterfaces", "throttled") != 3 {
		t.Errorf("throttling: up %v (want 1), throttled attempts %v (want 3)", up(), attemptErrors(t, reg, "DescribeNetworkInterfaces", "throttled"))
	}
	fault("DescribeNetworkInterfaces", "AuthFailure")
	_, _ = c.ListENIs(ctx)
	if up() != 0 || len(logs.matching("EC2 request failed", `"kind"="auth"`)) != 1 {
		t.Errorf("AuthFailure: up %v (want 0); auth lines %d (want 1: the same kind within ErrorLogInterval)", up(), len(logs.matching("EC2 request failed", `"kind"="auth"`)))
	}
	fault("DescribeNetworkInterfaces", "InternalError")
	_, _ = c.ListENIs(ctx)
	if n := attemptErrors(t, reg, "DescribeNetworkInterfaces", "server"); n != 3 {
		t.Errorf("server errors counted: %v, want 3", n)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// attemptErrors returns eni_operator_ec2_attempt_errors_total{operation,kind}.
func attemptErrors(t *testing.T, reg *prometheus.Registry, operation, kind string) float64 {
	t.Helper()
	return testenv.MetricValue(t, reg, "eni_operator_ec2_attempt_errors_total", map[string]string{"operation": operation, "kind": kind})
}
