package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

// operatorCommand makes the test binary act as eni-operator, so a test
// runs the real command (its stderr, its exit status) without a separate
// build.
var operatorCommand = clitest.Command{Name: "eni-operator", Env: "ENI_OPERATOR_TEST_CHILD"}

func TestMain(m *testing.M) { operatorCommand.Main(m, main) }

// badValues lists, for every flag of the command, values it must refuse;
// a flag without any names why in none.
var badValues = map[string][]string{
	"metrics-bind-address":           {"localhost", "8090x", ":99999", "1.2.3.4:", ":", "-1", "a b:80"},
	"health-probe-bind-address":      {"localhost", ":65536", "host:port"},
	"pprof-bind-address":             {"pprof", ":70000"},
	"metrics-secure":                 {"maybe"},
	"leader-elect":                   {"maybe"},
	"leader-election-namespace":      {"Ops", "-ops", "ops_ns"},
	"leader-elect-lease-duration":    {"0", "-1s", "soon"},
	"leader-elect-renew-deadline":    {"0", "-1s"},
	"leader-elect-retry-period":      {"0", "-2s"},
	"leader-elect-release-on-cancel": {"maybe"},
	"graceful-shutdown-timeout":      {"-1s", "forever"},
	"cluster-name": {"CHANGE-ME", "change-me", "<cluster-name>", "CLUSTER", "prod<1>", "-prod", "prod.eu", "a b",
		strings.Repeat("c", 101)},
	"kube-api-qps":                      {"0", "-1", "NaN", "+Inf", "fast"},
	"kube-api-burst":                    {"0", "-5", "1.5"},
	"enable-tagger":                     {"maybe"},
	"memory-limit-percent":              {"-1", "101", "90%", "half"},
	"gc-percent":                        {"0", "9", "1001", "-1", "off", "50%"},
	"vpc-id":                            {"banana", "vpc-1", "vpc-0123456789ABCDEF0", "subnet-01234567", "vpc-0123456789"},
	"aws-rate-limit-share":              {"0", "-0.5", "1.5", "NaN", "+Inf", "half"},
	"aws-rate-limit-qps":                {"-1", "NaN", "+Inf"},
	"aws-rate-limit-burst":              {"0", "-1"},
	"aws-max-attempts":                  {"0", "-3"},
	"aws-max-backoff":                   {"0", "-1s"},
	"aws-batch-idle":                    {"0", "-1ms"},
	"aws-batch-max-wait":                {"0", "-1ms"},
	"aws-tag-batch-idle":                {"0", "-1ms"},
	"aws-tag-batch-max-wait":            {"0", "-1s"},
	"ec2-unready-after":                 {"-1s", "soon"},
	"annotation-key":                    {"", "bad key", "a/b/c"},
	"watch-namespace":                   {"Shop", "shop_1"},
	"max-concurrent-reconciles":         {"0", "-1"},
	"dry-run":                           {"maybe"},
	"default-tags":                      {"aws:x=1", "Kubernetes.io/cluster/a=owned", "eni-tagger.io/hash=x", "Team=" + strings.Repeat("v", 257), "{bad json", "=v"},
	"enable-tag-policies":               {"maybe"},
	"allow-shared-eni-tagging":          {"maybe"},
	"subnet-ids":                        {"subnet-1", "vpc-0123456789abcdef0", "subnet-xyz12345"},
	"enable-eni-cache":                  {"maybe"},
	"enable-cache-configmap":            {"maybe"},
	"cache-batch-interval":              {"0", "-1s"},
	"cache-batch-size":                  {"0", "-1"},
	"cache-shards":                      {"0", "1025"},
	"pod-rate-limit-qps":                {"-0.1", "NaN"},
	"pod-rate-limit-burst":              {"0", "-1"},
	"pod-finalizer":                     {"maybe"},
	"tag-allow":                         {strings.Repeat("k", 129), "Team\x1b[31m*", "a\u0085*", "\xff*"},
	"tag-deny":                          {strings.Repeat("k", 129), "Secret\u009b*", "a\x7f"},
	"eni-inventory-interval":            {"-5m"},
	"cache-namespace":                   {"", "Kube-System"},
	"ownership-key-secret":              {"", "Keys", "-keys"},
	"nodeeni-resync-interval":           {"-1s", "0"},
	"nodeeni-catalog-interval":          {"-1s", "0"},
	"nodeeni-detach-poll-interval":      {"-1s", "0"},
	"nodeeni-collector-grace-period":    {"-1s", "0"},
	"nodeeni-agent-report-grace-period": {"-1s", "0"},
	"nodeeni-max-concurrent-reconciles": {"0", "-1"},
	"nodeeni-max-parallel-nodes":        {"0", "-1"},
	"enable-nodeeni-controller":         {"maybe"},
	"enable-eni-collector":              {"maybe"},
	"enable-multus-pod-addresses":       {"maybe"},
	"enable-readiness-taint":            {"maybe"},
	"remove-pod-finalizers":             {"maybe"},
	"version":                           {"maybe"},
	"kubeconfig":                        {"/nonexistent/kubeconfig", "/"},
	"zap-devel":                         {"maybe"},
	"zap-encoder":                       {"xml"},
	"zap-log-level":                     {"loud", "0", "-1"},
	"zap-stacktrace-level":              {"debug"},
	"zap-time-encoding":                 {"sundial"},
	"rate-limiter-cleanup-interval":     {"-1m", "soon"},
	"aws-health-max-successes":          {"-1", "many"},
	"enable-leader-election":            {"maybe"},
	"dev-mode":                          {"maybe"},
}

// none lists the flags that take any value, and why.
var none = map[string]string{
	"tag-namespace": "k8s-eni-tagger took any value: only 'enable' namespaces keys, any other turns namespacing off (with a warning at start)",
	"metrics-addr":  "aws-multi-eni-controller's name of --metrics-bind-address: what it refuses is reported under that name (TestLegacySettings)",
}

// Every flag's bad values are refused before anything starts: exit status
// 2 and one line on stderr naming the flag, the value and what is
// allowed. A flag added without bad values here fails the test.
func TestEveryFlagRefusesBadValues(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "")
	t.Setenv("ENI_TAGGER_SUBNET_IDS", "")
	t.Setenv("POD_NAMESPACE", "")
	// A value wrongly accepted must not start anything against a real
	// cluster: with no kubeconfig to find, the command stops with exit 1.
	clitest.NoCluster(t)
	var c config
	clitest.EveryFlagHasBadValues(t, flags(&c), badValues, none)
	clitest.RunMainRefuses(t, "eni-operator", badValues, nil, runMain)
}

// Good values pass, and a bare port (k8s-eni-tagger accepted
// --metrics-bind-address=8090) becomes :8090; 0 keeps an endpoint off,
// and the documented zeros keep their meaning.
func TestGoodValuesAndNormalisation(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "")
	c, err := parse([]string{"--metrics-bind-address=8090", "--health-probe-bind-address=127.0.0.1:8081", "--pprof-bind-address=0",
		"--cluster-name=prod-eu_1", "--vpc-id=vpc-0123456789abcdef0", "--subnet-ids=subnet-01234567",
		"--eni-inventory-interval=0", "--pod-rate-limit-qps=0", "--graceful-shutdown-timeout=0", "--kube-api-qps=0.5",
		"--zap-log-level=3", "--leader-election-namespace=ops"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.op.MetricsAddr != ":8090" || c.op.ProbeAddr != "127.0.0.1:8081" || c.op.PprofAddr != "0" || c.op.ClusterName != "prod-eu_1" ||
		c.op.Tagger.InventoryInterval != 0 {
		t.Fatalf("%+v", c.op)
	}
	// Empty keeps the NodeENI controller off, as before.
	if _, err := parse([]string{"--cluster-name="}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	// The environment's cluster name is checked like the flag's.
	t.Setenv("CLUSTER_NAME", "CHANGE-ME")
	if _, err := parse(nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--cluster-name") {
		t.Fatalf("CLUSTER_NAME=CHANGE-ME: %v", err)
	}
}

// Several bad flags are reported together, still on one line.
func TestSeveralBadFlagsOneLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"--vpc-id=banana", "--aws-rate-limit-qps=-1", "--aws-rate-limit-burst=0", "--nodeeni-resync-interval=-1s"}, &stdout, &stderr)
	if code != 2 || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("exit %d: %q", code, stderr.String())
	}
	for _, f := range []string{"--vpc-id=banana", "--aws-rate-limit-qps=-1", "--aws-rate-limit-burst=0", "--nodeeni-resync-interval=-1s"} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("%q lacks %s", stderr.String(), f)
		}
	}
}

// Without a kubeconfig, in an empty environment, the real command says
// in one line how to give it one and exits 1: no stack trace, no
// KUBERNETES_MASTER.
func TestNoKubeconfig(t *testing.T) {
	operatorCommand.NoKubeconfig(t, "", "KUBECONFIG=$HOME/missing")
	operatorCommand.NoKubeconfig(t, "--remove-pod-finalizers")
}
