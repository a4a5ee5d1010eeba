package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// compatRow is one setting of an original project: how it is given, and
// what it must do here. want reads the value the setting lands on (nil:
// it has no effect and only warns); warn, when set, must appear in one
// start warning.
type compatRow struct {
	setting string // a flag name, or an environment variable in capitals
	value   string
	want    any
	got     func(*config) any
	warn    string
}

// taggerRows are every flag of k8s-eni-tagger (its pkg/config.defineFlags)
// with a value other than its default here, and where it lands.
func taggerRows() []compatRow {
	return []compatRow{
		{setting: "metrics-bind-address", value: "8095", want: ":8095", got: func(c *config) any { return c.op.MetricsAddr }},
		{setting: "health-probe-bind-address", value: "8082", want: ":8082", got: func(c *config) any { return c.op.ProbeAddr }},
		{setting: "leader-elect", value: "true", want: true, got: func(c *config) any { return c.op.LeaderElection.Enabled }},
		{setting: "annotation-key", value: "example.com/tags", want: "example.com/tags", got: func(c *config) any { return c.op.Tagger.AnnotationKey }},
		{setting: "max-concurrent-reconciles", value: "7", want: 7, got: func(c *config) any { return c.op.Tagger.MaxConcurrentReconciles }},
		{setting: "dry-run", value: "true", want: true, got: func(c *config) any { return c.op.Tagger.DryRun }},
		{setting: "watch-namespace", value: "shop", want: "shop", got: func(c *config) any { return c.op.Tagger.WatchNamespace }},
		{setting: "version", value: "true", want: true, got: func(c *config) any { return c.printVersion }},
		{setting: "subnet-ids", value: "subnet-01234567, subnet-89abcdef", want: "subnet-01234567,subnet-89abcdef",
			got: func(c *config) any { return strings.Join(c.op.Tagger.SubnetIDs, ",") }},
		{setting: "allow-shared-eni-tagging", value: "true", want: true, got: func(c *config) any { return c.op.Tagger.AllowSharedENITagging }},
		{setting: "enable-eni-cache", value: "false", want: false, got: func(c *config) any { return c.op.Tagger.ResolveFromMemory }},
		{setting: "enable-cache-configmap", value: "false", want: false, got: func(c *config) any { return c.op.Tagger.PersistLedger }},
		{setting: "cache-batch-interval", value: "5s", want: 5 * time.Second, got: func(c *config) any { return c.op.Tagger.LedgerBatchInterval }},
		{setting: "cache-batch-size", value: "50", want: 50, got: func(c *config) any { return c.op.Tagger.LedgerBatchSize }},
		{setting: "aws-rate-limit-qps", value: "12.5", want: 12.5, got: func(c *config) any { return c.op.EC2.QPS }},
		{setting: "aws-rate-limit-burst", value: "30", want: 30, got: func(c *config) any { return c.op.EC2.Burst }},
		{setting: "pprof-bind-address", value: "6060", want: ":6060", got: func(c *config) any { return c.op.PprofAddr }},
		{setting: "tag-namespace", value: "enable", want: "enable", got: func(c *config) any { return c.op.Tagger.TagNamespace }},
		{setting: "pod-rate-limit-qps", value: "0.5", want: 0.5, got: func(c *config) any { return c.op.Tagger.PodRateLimitQPS }},
		{setting: "pod-rate-limit-burst", value: "3", want: 3, got: func(c *config) any { return c.op.Tagger.PodRateLimitBurst }},
		{setting: "rate-limiter-cleanup-interval", value: "2m", warn: "--pod-rate-limit-qps"},
		{setting: "aws-health-max-successes", value: "5", warn: "--ec2-unready-after"},
	}
}

// multiENIRows are every flag of aws-multi-eni-controller's controller
// (cmd/main.go) and every environment variable its pkg/config and its
// chart's controller Deployment set.
func multiENIRows() []compatRow {
	rows := []compatRow{
		{setting: "metrics-addr", value: ":8080", want: ":8080", got: func(c *config) any { return c.op.MetricsAddr }, warn: "--metrics-bind-address"},
		{setting: "enable-leader-election", value: "true", want: true, got: func(c *config) any { return c.op.LeaderElection.Enabled }, warn: "--leader-elect"},
		{setting: "dev-mode", value: "true", want: true, got: func(c *config) any { return c.zap.Development }, warn: "--zap-devel"},
		{setting: "RECONCILE_PERIOD", value: "30s", want: 30 * time.Second, got: func(c *config) any { return c.op.NodeENI.ResyncInterval }},
		{setting: "MAX_CONCURRENT_RECONCILES", value: "4", want: 4, got: func(c *config) any { return c.op.NodeENI.MaxConcurrentReconciles }},
		{setting: "MAX_CONCURRENT_ENI_CLEANUP", value: "3", want: 3, got: func(c *config) any { return c.op.NodeENI.MaxParallelNodes }},
		{setting: "DEFAULT_DEVICE_INDEX", value: "2", warn: "spec.deviceIndex"},
		{setting: "DEFAULT_DELETE_ON_TERMINATION", value: "false", warn: "spec.deleteOnTermination"},
		{setting: "DETACHMENT_TIMEOUT", value: "1m", warn: "--nodeeni-detach-poll-interval"},
		{setting: "MAX_CLEANUP_DURATION", value: "5m", warn: "--nodeeni-detach-poll-interval"},
		{setting: "LOG_LEVEL", value: "debug", warn: "--zap-log-level"},
		{setting: "METRICS_PORT", value: "8080", warn: "--metrics-bind-address"},
		{setting: "USE_EC2_FACADE", value: "true", warn: "batched"},
		{setting: "EC2_INSTANCE_ID", value: "i-0123456789abcdef0", warn: "providerID"},
		{setting: "PRIVATE_IP", value: "10.0.0.1", warn: "providerID"},
	}
	for _, e := range []string{"CIRCUIT_BREAKER_ENABLED", "CIRCUIT_BREAKER_FAILURE_THRESHOLD", "CIRCUIT_BREAKER_SUCCESS_THRESHOLD", "CIRCUIT_BREAKER_TIMEOUT"} {
		rows = append(rows, compatRow{setting: e, value: "1", warn: "--aws-max-attempts"})
	}
	for _, e := range []string{"IMDS_AUTO_CONFIGURE_HOP_LIMIT", "IMDS_HOP_LIMIT", "IMDS_AGGRESSIVE_CONFIGURATION"} {
		rows = append(rows, compatRow{setting: e, value: "2", warn: "launch template"})
	}
	// Read by the AWS SDK or selecting nothing: accepted, no warning.
	for _, e := range []string{"AWS_REGION", "AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_V1_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_METADATA_SERVICE_TIMEOUT", "AWS_METADATA_SERVICE_NUM_ATTEMPTS", "COMPONENT", "NODE_NAME"} {
		rows = append(rows, compatRow{setting: e, value: "x"})
	}
	return rows
}

// clearCompatEnv empties every variable the rows use, so the host's
// environment cannot leak into a row.
func clearCompatEnv(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "")
	for _, r := range append(taggerRows(), multiENIRows()...) {
		if isEnv(r.setting) {
			t.Setenv(r.setting, "")
		} else {
			t.Setenv(taggerEnv(r.setting), "")
		}
	}
}

func isEnv(s string) bool { return strings.ToUpper(s) == s }

func taggerEnv(flag string) string {
	return "ENI_TAGGER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func checkRow(t *testing.T, how string, r compatRow, args []string) {
	t.Helper()
	c, err := parse(args, &bytes.Buffer{})
	if err != nil {
		t.Errorf("%s %s=%s: %v", how, r.setting, r.value, err)
		return
	}
	if r.got != nil {
		if got := r.got(c); got != r.want {
			t.Errorf("%s %s=%s: got %v, want %v", how, r.setting, r.value, got, r.want)
		}
	}
	joined := strings.Join(c.warnings, "\n")
	switch {
	case r.warn == "" && len(c.warnings) > 0:
		t.Errorf("%s %s=%s: unexpected warnings %q", how, r.setting, r.value, c.warnings)
	case r.warn != "" && (len(c.warnings) != 1 || !strings.Contains(joined, r.warn) || !strings.Contains(joined, r.setting)):
		t.Errorf("%s %s=%s: warnings %q, want one naming the setting and %s", how, r.setting, r.value, c.warnings, r.warn)
	}
}

// Every k8s-eni-tagger flag works here, given as a flag and given as its
// ENI_TAGGER_* variable; the command line wins over the environment.
func TestK8sENITaggerSettings(t *testing.T) {
	clearCompatEnv(t)
	rows := taggerRows()
	var names []string
	for _, r := range rows {
		names = append(names, r.setting)
	}
	if !slices.Equal(names, taggerFlags()) {
		t.Fatalf("rows %v\nwant every flag of k8s-eni-tagger %v", names, taggerFlags())
	}
	for _, r := range rows {
		checkRow(t, "flag", r, []string{"--" + r.setting + "=" + r.value})
		t.Run(r.setting, func(t *testing.T) {
			t.Setenv(taggerEnv(r.setting), r.value)
			checkRow(t, "env", r, nil)
		})
	}
	// flag > env, as viper's BindPFlags + AutomaticEnv did.
	t.Setenv("ENI_TAGGER_METRICS_BIND_ADDRESS", "9999")
	t.Setenv("ENI_TAGGER_CACHE_BATCH_SIZE", "7")
	c, err := parse([]string{"--metrics-bind-address=8091"}, &bytes.Buffer{})
	if err != nil || c.op.MetricsAddr != ":8091" || c.op.Tagger.LedgerBatchSize != 7 {
		t.Fatalf("flag and env: %v %+v", err, c)
	}
	// A bad value is refused naming the variable and what is allowed.
	t.Setenv("ENI_TAGGER_CACHE_BATCH_SIZE", "many")
	if _, err := parse(nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "ENI_TAGGER_CACHE_BATCH_SIZE=many") ||
		!strings.Contains(err.Error(), "an integer") {
		t.Fatalf("bad env: %v", err)
	}
}

// --tag-namespace warns when it is neither off nor "enable" (which
// Options.policy turns into no prefix; the tagger tests check the keys).
func TestTagNamespaceWarns(t *testing.T) {
	clearCompatEnv(t)
	c, err := parse([]string{"--tag-namespace=disabled"}, &bytes.Buffer{})
	if err != nil || len(c.warnings) != 1 || !strings.Contains(c.warnings[0], "--tag-namespace=disabled leaves tag keys unprefixed") {
		t.Fatalf("%v %q", err, c.warnings)
	}
}

// Every aws-multi-eni-controller controller flag and environment setting
// works here, sets its replacement, or warns naming it.
func TestMultiENIControllerSettings(t *testing.T) {
	clearCompatEnv(t)
	for _, r := range multiENIRows() {
		t.Run(r.setting, func(t *testing.T) {
			if isEnv(r.setting) {
				t.Setenv(r.setting, r.value)
				checkRow(t, "env", r, nil)
				return
			}
			checkRow(t, "flag", r, []string{"--" + r.setting + "=" + r.value})
		})
	}
	want := map[string]bool{}
	for _, v := range multiENIEnv() {
		want[v.Env] = true
	}
	for _, v := range multiENIIgnoredEnv() {
		want[v.Env] = true
	}
	for _, r := range multiENIRows() {
		delete(want, r.setting)
	}
	if len(want) > 0 {
		t.Errorf("settings without a row: %v", want)
	}
}

// The old names of renamed flags: boolean ones work without a value, the
// flag given on the command line wins over the environment, and a refused
// value names the flag it sets.
func TestLegacySettings(t *testing.T) {
	clearCompatEnv(t)
	c, err := parse([]string{"--enable-leader-election", "--dev-mode=false"}, &bytes.Buffer{})
	if err != nil || !c.op.LeaderElection.Enabled || c.zap.Development {
		t.Fatalf("%v %+v", err, c)
	}
	t.Setenv("ENI_TAGGER_METRICS_BIND_ADDRESS", "9999")
	t.Setenv("MAX_CONCURRENT_RECONCILES", "4")
	c, err = parse([]string{"--metrics-addr=:8080", "--nodeeni-max-concurrent-reconciles=6"}, &bytes.Buffer{})
	if err != nil || c.op.MetricsAddr != ":8080" || c.op.NodeENI.MaxConcurrentReconciles != 6 {
		t.Fatalf("%v %+v", err, c)
	}
	if _, err := parse([]string{"--metrics-addr=localhost"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--metrics-bind-address=localhost") {
		t.Fatalf("--metrics-addr=localhost: %v", err)
	}
	t.Setenv("RECONCILE_PERIOD", "soon")
	if _, err := parse(nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "RECONCILE_PERIOD=soon") {
		t.Fatalf("RECONCILE_PERIOD=soon: %v", err)
	}
}
