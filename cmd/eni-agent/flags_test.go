package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

// badValues lists, for every flag of the command, values it must refuse;
// a flag without any names why in none.
var badValues = map[string][]string{
	"node-name":                 {"", "Node_1", "-n", strings.Repeat("n", 254)},
	"node-ip":                   {"10.0.0", "node"},
	"sysfs-root":                {"", "sys", "./sys"},
	"dpdk-driver":               {"", "../vfio", "vfio pci", "a/b"},
	"sriov-config":              {"config.json", "etc/pcidp/config.json"},
	"sriov-reload":              {"kill", "touch:rel", "touch:", "none:/x", "signal:"},
	"state-file":                {"", "state.json"},
	"retry-max":                 {"0", "-1s", "500ms", "later"},
	"metrics-bind-address":      {"localhost", ":99999", "metrics", "1.2.3.4:"},
	"health-probe-bind-address": {"localhost", ":65536", "9811x"},
	"kube-api-qps":              {"0", "-1", "NaN", "fast"},
	"kube-api-burst":            {"0", "-1", "1.5"},
	"kubeconfig":                {"/nonexistent/kubeconfig", "/"},
	"probe":                     {"ftp://127.0.0.1/healthz", "127.0.0.1:9811", "http://"},
	"version":                   {"maybe"},
	"zap-devel":                 {"maybe"},
	"zap-encoder":               {"xml"},
	"zap-log-level":             {"loud", "0", "-1"},
	"zap-stacktrace-level":      {"debug"},
	"zap-time-encoding":         {"sundial"},
}

// none lists the flags that take any value, and why.
var none = map[string]string{}

// Every flag's bad values are refused before anything starts: exit status
// 2 and one line on stderr naming the flag, the value and what is
// allowed. A flag added without bad values here fails the test.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	// A value wrongly accepted must not start anything against a real
	// cluster: with no kubeconfig to find, the command stops with exit 1.
	clitest.NoCluster(t)
	var c config
	clitest.EveryFlagHasBadValues(t, flags(&c), badValues, none)
	clitest.RunMainRefuses(t, "eni-agent", badValues, []string{"--node-name=n1"}, runMain)
}

// A bare port becomes :port, 0 keeps an endpoint off.
func TestAddressesNormalised(t *testing.T) {
	c, err := parse([]string{"--node-name=ip-10-0-0-1.ec2.internal", "--metrics-bind-address=9810", "--health-probe-bind-address=0", "--retry-max=1s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.metricsAddr != ":9810" || c.probeAddr != "0" {
		t.Fatalf("%q %q", c.metricsAddr, c.probeAddr)
	}
}

// --version needs nothing else (no node name) and prints the build as
// eni-operator does: the version, the VCS revision, the Go version.
func TestVersion(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	clitest.PrintsVersion(t, "eni-agent", runMain)
}

// Without a kubeconfig, in an empty environment, the real command says
// in one line how to give it one and exits 1: no stack trace, no
// KUBERNETES_MASTER.
func TestNoKubeconfig(t *testing.T) {
	agentCommand.NoKubeconfig(t, "--node-name=n1", "KUBECONFIG=$HOME/missing")
}

// --probe is the exec probe of the DaemonSet (health listens on the
// node's loopback): exit 0 on 200, 1 on anything else, with nothing
// else needed (no node name, no cluster).
func TestProbe(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, "[-]informer-sync failed")
	}))
	defer srv.Close()
	run := func() (int, string) {
		var stdout, stderr bytes.Buffer
		code := runMain([]string{"--probe=" + srv.URL + "/readyz"}, &stdout, &stderr)
		return code, stderr.String()
	}
	if code, msg := run(); code != 0 || msg != "" {
		t.Fatalf("healthy: exit %d, %q", code, msg)
	}
	status = http.StatusInternalServerError
	if code, msg := run(); code != 1 || !strings.Contains(msg, "500") || !strings.Contains(msg, "informer-sync") {
		t.Fatalf("unhealthy: exit %d, %q", code, msg)
	}
	srv.Close()
	if code, msg := run(); code != 1 || !strings.Contains(msg, "probe") {
		t.Fatalf("nothing listening: exit %d, %q", code, msg)
	}
}
