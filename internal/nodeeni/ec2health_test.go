package nodeeni_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
)

// The EC2 endpoint stops and starts again on the same address, under a
// running operator: the failures are logged at once, eni_operator_ec2_up
// goes to 0, and after --ec2-unready-after /readyz fails and the
// NodeENI's Ready condition turns Unknown (EC2Unreachable) naming the
// error; when the endpoint is back all of it recovers by itself.
func TestEC2UnreachableAndBack(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "m5.xlarge", Subnet: "nodes-a"}}})
	srv := testenv.ServeRestartable(t, h.Emulator)
	h.addNode("n0", h.instance(0), "us-east-1a", nil)
	var (
		mu    sync.Mutex
		lines []string
	)
	ec2cfg := ec2Config()
	ec2cfg.UnreadyAfter, ec2cfg.ErrorLogInterval = time.Second, time.Hour
	ec2cfg.Logger = funcr.New(func(_, args string) { mu.Lock(); lines = append(lines, args); mu.Unlock() }, funcr.Options{})
	m, readyz := startWithReadyz(h, h.options(), srv.URL, ec2cfg)
	reg := m.Registry

	spec := h.spec(nil)
	spec.SubnetNames = []string{"multus-a"}
	spec.SecurityGroupNames = []string{"multus"}
	h.createNodeENI("outage", spec)
	h.ready("outage", 1)
	h.eventually("/readyz 200", waitFor, func() (bool, string) { c, b := readyz(); return c == http.StatusOK, b })
	if up := testenv.MetricValue(t, reg, "eni_operator_ec2_up", nil); up != 1 {
		t.Fatalf("eni_operator_ec2_up = %v with EC2 answering", up)
	}

	srv.Down()
	h.eventually("Ready Unknown EC2Unreachable", waitFor, func() (bool, string) {
		c := condition(h.get("outage"), v1alpha1.ConditionReady)
		return c.Status == metav1.ConditionUnknown && c.Reason == nodeeni.ReasonEC2Unreachable, c.Reason + ": " + c.Message
	})
	c := condition(h.get("outage"), v1alpha1.ConditionReady)
	if !strings.Contains(c.Message, "request send failed") || !strings.Contains(c.Message, strings.TrimPrefix(srv.URL, "http://")) {
		t.Errorf("the condition does not name the last error and its endpoint: %s", c.Message)
	}
	if up := testenv.MetricValue(t, reg, "eni_operator_ec2_up", nil); up != 0 {
		t.Errorf("eni_operator_ec2_up = %v with EC2 down", up)
	}
	if n := testenv.MetricValue(t, reg, "eni_operator_ec2_attempt_errors_total", map[string]string{"kind": "unreachable"}); n < 2 {
		t.Errorf("unreachable attempts counted: %v", n)
	}
	if code, body := readyz(); code != http.StatusInternalServerError || !strings.Contains(body, "ec2") {
		t.Errorf("/readyz with EC2 down past the threshold: %d %s", code, body)
	}
	mu.Lock()
	var failed []string
	for _, l := range lines {
		if strings.Contains(l, `"msg"="EC2 request failed"`) && strings.Contains(l, `"kind"="unreachable"`) && strings.Contains(l, `"action"="DescribeNetworkInterfaces"`) {
			failed = append(failed, l)
		}
	}
	mu.Unlock()
	if len(failed) != 1 {
		t.Errorf("log lines of the failed attempts: %d, want 1 (one per kind per ErrorLogInterval): %q", len(failed), failed)
	}

	srv.Up(t)
	h.ready("outage", 1)
	h.eventually("/readyz 200 again", waitFor, func() (bool, string) { c, b := readyz(); return c == http.StatusOK, b })
	if up := testenv.MetricValue(t, reg, "eni_operator_ec2_up", nil); up != 1 {
		t.Errorf("eni_operator_ec2_up = %v after EC2 is back", up)
	}
}

// startWithReadyz runs the NodeENI controller like harness.start, with
// an EC2 client of c against endpoint and the manager's health probe
// served, and returns a probe of /readyz.
func startWithReadyz(h *harness, o nodeeni.Options, endpoint string, c ec2.Config) (*testenv.Manager, func() (int, string)) {
	h.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	m := h.startWith(o, endpoint, c, ctrl.Options{HealthProbeBindAddress: addr})
	hc := &http.Client{Timeout: 2 * time.Second}
	return m, func() (int, string) {
		resp, err := hc.Get("http://" + addr + "/readyz?verbose=1")
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
