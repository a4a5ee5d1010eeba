package observability

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// synthetic are the series Prometheus makes itself for every target.
var synthetic = []string{"up"}

// Every metric the dashboard, the alerting rules and docs/migration.md's
// table of the originals' metrics query is exposed by
// the binaries: the operator, built by operator.NewManager as the binary
// builds it (pod tagger, NodeENI controller and collector, leader
// election on, plain-HTTP metrics), and the eni-agent binary, both
// against a real API server and the EC2 emulator. They are put to work
// until every queried series exists (client_golang lists a vector only
// once it has a child): a pod is tagged, a NodeENI's ENI is created,
// attached, reported Pending by the agent (its MAC is on no host
// interface) and removed with its NodeENI, and the emulator throttles
// some DescribeNetworkInterfaces calls. eni_operator_* and controller
// series must come from the operator, eni_agent_* from the agent.
func TestEveryMetricUsedIsExposed(t *testing.T) {
	used := map[string][]string{} // metric -> where
	for _, r := range alertRules(t) {
		for _, m := range metricNames(r.Expr) {
			used[m] = append(used[m], "alert "+r.Alert)
		}
	}
	for _, q := range dashboardQueries(t) {
		for _, m := range metricNames(grafanaVars.Replace(q.Expr)) {
			used[m] = append(used[m], "panel "+q.Panel)
		}
	}
	for _, q := range migrationQueries(t) {
		for _, m := range metricNames(q.Expr) {
			used[m] = append(used[m], q.Panel)
		}
	}
	for _, s := range synthetic {
		delete(used, s)
	}
	agentBin := buildAgent(t)

	ctx := context.Background()
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"), testenv.WithENIs(testenv.BranchENIs(1, nil))))
	// Some throttling, retried by the client: the throttle series.
	if err := e.Emulator.Configure(emulator.Config{Faults: map[string]emulator.Fault{
		"DescribeNetworkInterfaces": {ErrorRate: 0.3, ErrorCode: "RequestLimitExceeded"},
	}}); err != nil {
		t.Fatal(err)
	}
	vpc, instance, podIP := e.VPC, e.World.Instances[0].ID, e.World.NetworkInterfaces[0].PrivateIP

	cl := operatorenv.NewOneNode(t, "obs", instance)
	k8s, ne := cl.K8s, cl.NodeENI
	// Registering Multus pod addresses: their series.
	registers := ne.DeepCopy()
	registers.Spec.Multus = &v1alpha1.MultusSpec{RegisterPodAddresses: true}
	if err := k8s.Patch(ctx, registers, client.MergeFrom(ne)); err != nil {
		t.Fatal(err)
	}
	cl.Pod(t, "app", podIP, "team=network,cost-center=42")

	// The node agent of node-0, as the DaemonSet runs it.
	agentMetrics := startAgent(t, cl, agentBin)

	// The whole operator, as the binary builds it, finding the emulator
	// the way it finds AWS, its metrics served by controller-runtime from
	// the global registry as in production (Config.Registerer nil).
	oc := cl.Config(vpc)
	opMetrics := testenv.FreeAddr(t)
	oc.MetricsAddr = opMetrics
	oc.MetricsSecure = false
	oc.LeaderElection.Enabled, oc.LeaderElection.Namespace = true, cl.OpsNS
	cl.Start(t, e.URL, oc)

	// The NodeENI's ENI is attached and the agent has reported it (Pending:
	// no host interface has its MAC); then the NodeENI goes, and its ENI
	// is removed (a cleanup).
	// Series seen in any scrape count: a NodeENI's own series go with it.
	op, ag := map[string]bool{}, map[string]bool{}
	scrapeBoth := func() {
		maps.Copy(op, scrape(opMetrics))
		maps.Copy(ag, scrape(agentMetrics))
	}
	eventually(t, 90*time.Second, "the agent's report of the NodeENI's ENI, and its pod addresses counted", func() (bool, string) {
		scrapeBoth()
		if !op["eni_operator_pod_addresses"] {
			return false, "no eni_operator_pod_addresses"
		}
		var ens v1alpha1.ENINodeList
		if err := k8s.List(ctx, &ens); err != nil {
			return false, err.Error()
		}
		for _, en := range ens.Items {
			if len(en.Status.Interfaces) > 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("ENINodes %+v", ens.Items)
	})
	if err := k8s.Delete(ctx, ne); err != nil {
		t.Fatal(err)
	}

	eventually(t, 90*time.Second, "every queried series", func() (bool, string) {
		scrapeBoth()
		missing := missingSeries(used, op, ag)
		return len(missing) == 0, strings.Join(missing, "\n")
	})
	names := slices.Sorted(maps.Keys(used))
	t.Logf("%d metrics queried, all exposed: %s", len(names), strings.Join(names, ", "))
}

// missingSeries lists the queried metrics the scrapes lack, each with the
// alerts and panels that query it: eni_agent_* must be the agent's,
// everything else the operator's.
func missingSeries(used map[string][]string, op, ag map[string]bool) []string {
	var missing []string
	for m, where := range used {
		from, scraped := "operator", op
		if strings.HasPrefix(m, "eni_agent_") {
			from, scraped = "agent", ag
		}
		// A histogram is named by its family in docs/metrics.md's
		// table; /metrics lists its samples (name_count among them).
		if !scraped[m] && !scraped[m+"_count"] {
			missing = append(missing, fmt.Sprintf("%s (not in the %s's /metrics; queried by %s)", m, from, strings.Join(slices.Compact(where), ", ")))
		}
	}
	slices.Sort(missing)
	return missing
}

// scrape returns the names of the samples /metrics at addr serves (a
// histogram's name_bucket, name_sum and name_count), or nil when it does
// not answer.
func scrape(addr string) map[string]bool {
	series, err := testenv.Scrape("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for s := range series {
		out[strings.SplitN(s, "{", 2)[0]] = true
	}
	return out
}

// buildAgent builds cmd/eni-agent into a temporary directory.
func buildAgent(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: not root; the node agent opens netlink in the host's namespace")
	}
	bin := filepath.Join(t.TempDir(), "eni-agent")
	testenv.BuildCommand(t, "./cmd/eni-agent", bin)
	return bin
}

// startAgent runs the agent binary for the node of cl against its API
// server until the test ends, and returns its metrics address once it is
// ready.
func startAgent(t *testing.T, cl *operatorenv.OneNode, bin string) string {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := testenv.WriteKubeconfig(t, cl.Env.Config)
	metricsAddr, probeAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.StartProcess(t, "agent", bin, []string{"KUBECONFIG=" + kubeconfig},
		"--node-name="+cl.Node, "--state-file="+filepath.Join(dir, "state.json"),
		"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address="+probeAddr, "--retry-max=1s")
	eventually(t, 30*time.Second, "the agent's readiness", func() (bool, string) {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return metricsAddr
}

func eventually(t *testing.T, timeout time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	// Every 200 ms: each look scrapes both processes.
	testenv.EventuallyEvery(t, what, timeout, 200*time.Millisecond, ok)
}
