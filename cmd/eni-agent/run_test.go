package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kubeconfig"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

// agentCommand makes the test binary act as eni-agent, so a test runs
// the real command (its stderr, its exit status) without a separate
// build.
var agentCommand = clitest.Command{Name: "eni-agent", Env: "ENI_AGENT_TEST_CHILD"}

func TestMain(m *testing.M) {
	agentCommand.RunIfChild(main)
	testenv.Main(m, &shared)
}

// The command as the DaemonSet runs it: it connects, becomes ready once
// its cache is filled, and serves its metrics. Its node has no NodeENI, so
// it changes nothing on this host.
func TestRunServesProbesAndMetrics(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; the agent opens netlink in the host's namespace")
	}
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", testenv.WriteKubeconfig(t, shared.Env(t).Config))
	metricsAddr, probeAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	c, err := parse([]string{"--node-name=smoke-" + fmt.Sprint(time.Now().UnixNano()), "--state-file=" + filepath.Join(dir, "state.json"),
		"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probeAddr}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	restCfg, err := kubeconfig.Load("")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- run(ctx, restCfg, c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := get("http://" + probeAddr + "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := get("http://" + probeAddr + "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}
	code, body := get("http://" + metricsAddr + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "eni_agent_interfaces") || !strings.Contains(body, "controller_runtime_reconcile_total") {
		t.Fatalf("metrics %d:\n%.2000s", code, body)
	}
}
