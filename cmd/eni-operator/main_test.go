package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Flags of k8s-eni-tagger and aws-multi-eni-controller users keep working,
// with their defaults.
func TestOriginalFlagsParse(t *testing.T) {
	c, err := parse([]string{
		"--annotation-key=eni-tagger.io/tags", "--watch-namespace=shop", "--max-concurrent-reconciles=4",
		"--dry-run", "--allow-shared-eni-tagging", "--subnet-ids=subnet-0123456789abcdef0,subnet-89abcdef", "--enable-eni-cache=false",
		"--enable-cache-configmap", "--cache-batch-interval=5s", "--cache-batch-size=50",
		"--aws-rate-limit-qps=5", "--aws-rate-limit-burst=7", "--pod-rate-limit-qps=0.5", "--pod-rate-limit-burst=2",
		"--tag-namespace=enable", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
		"--leader-elect", "--pprof-bind-address=0", "--zap-log-level=debug",
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	o := c.op.Tagger
	if o.WatchNamespace != "shop" || o.MaxConcurrentReconciles != 4 || !o.DryRun || !o.AllowSharedENITagging ||
		len(o.SubnetIDs) != 2 || o.ResolveFromMemory || o.LedgerBatchInterval != 5*time.Second || o.LedgerBatchSize != 50 ||
		o.PodRateLimitQPS != 0.5 || o.PodRateLimitBurst != 2 || o.TagNamespace != "enable" {
		t.Fatalf("tagger options %+v", o)
	}
	if c.op.EC2.QPS != 5 || c.op.EC2.Burst != 7 || c.op.MetricsAddr != ":9090" || !c.op.LeaderElection.Enabled {
		t.Fatalf("config %+v", c)
	}

	d, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// k8s-eni-tagger's --aws-rate-limit-qps (10) is no longer a default:
	// without it there is no ceiling over AWS's per-family buckets. Its
	// --cache-batch-size (20) is now 250 changes per ConfigMap to write,
	// so a burst of pods costs at most one ledger write per 200, its last
	// partial batch included.
	if d.op.EC2.QPS != 0 || d.op.EC2.Burst != 20 || d.op.EC2.Share != 1 || d.op.Tagger.AnnotationKey != "eni-tagger.io/tags" ||
		d.op.Tagger.LedgerBatchInterval != 2*time.Second || d.op.Tagger.LedgerBatchSize != 250 || d.op.MetricsAddr != ":8090" {
		t.Fatalf("defaults %+v", d)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"--subnet-ids=vpc-1"}, {"--annotation-key="}, {"--nope"}, {"extra"}} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestHelpListsTheFlags(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, f := range []string{"--annotation-key", "--pod-finalizer", "--cluster-name", "--aws-rate-limit-qps", "--nodeeni-resync-interval", "--remove-pod-finalizers", "--kube-api-qps"} {
		if !strings.Contains(out.String(), "\n  "+f+" ") && !strings.Contains(out.String(), "\n  "+f+"\n") {
			t.Errorf("--help does not list %s (with two dashes)", f)
		}
	}
}

// The --zap-* flags parse and shape the logger: JSON by default (for log
// pipelines), console on request, levels honoured.
func TestLoggingFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		json      bool
		debugSeen bool
	}{
		{nil, true, false},
		{[]string{"--zap-encoder=json", "--zap-log-level=debug", "--zap-stacktrace-level=panic", "--zap-time-encoding=rfc3339"}, true, true},
		{[]string{"--zap-encoder=console", "--zap-log-level=info"}, false, false},
		{[]string{"--zap-devel=false", "--zap-log-level=2"}, true, true},
	} {
		c, err := parse(tc.args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		var buf bytes.Buffer
		log := zap.New(zap.UseFlagOptions(&c.zap), zap.WriteTo(&buf))
		log.Info("hello", "pod", "shop/web-0")
		log.V(1).Info("debug line")
		first, _, _ := strings.Cut(buf.String(), "\n")
		var rec map[string]any
		isJSON := json.Unmarshal([]byte(first), &rec) == nil
		if isJSON != tc.json {
			t.Errorf("%v: JSON=%v, want %v: %q", tc.args, isJSON, tc.json, first)
		}
		if isJSON && (rec["msg"] != "hello" || rec["pod"] != "shop/web-0" || rec["level"] != "info") {
			t.Errorf("%v: record %v", tc.args, rec)
		}
		if got := strings.Contains(buf.String(), "debug line"); got != tc.debugSeen {
			t.Errorf("%v: debug line printed=%v, want %v", tc.args, got, tc.debugSeen)
		}
	}
	if _, err := parse([]string{"--zap-encoder=xml"}, &bytes.Buffer{}); err == nil {
		t.Error("--zap-encoder=xml accepted")
	}
}

// Leader election timings and release-on-cancel are flags; timings
// client-go would refuse at start are refused at parse time.
func TestLeaderElectionFlags(t *testing.T) {
	c, err := parse([]string{"--leader-elect", "--leader-election-namespace=ops", "--leader-elect-lease-duration=30s",
		"--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=4s", "--leader-elect-release-on-cancel=false",
		"--graceful-shutdown-timeout=45s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	le := c.op.LeaderElection
	if !le.Enabled || le.Namespace != "ops" || le.LeaseDuration != 30*time.Second || le.RenewDeadline != 20*time.Second ||
		le.RetryPeriod != 4*time.Second || le.ReleaseOnCancel || c.op.GracefulShutdownTimeout != 45*time.Second {
		t.Fatalf("leader election %+v", le)
	}
	d, _ := parse(nil, &bytes.Buffer{})
	if !d.op.LeaderElection.ReleaseOnCancel || d.op.LeaderElection.LeaseDuration != 15*time.Second {
		t.Fatalf("defaults %+v", d.op.LeaderElection)
	}
	for _, args := range [][]string{
		{"--leader-elect", "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=10s"},
		{"--leader-elect", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"},
	} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// --version needs nothing else and prints the build: the version, the VCS
// revision when there is one, the Go version.
func TestVersion(t *testing.T) {
	clitest.PrintsVersion(t, "eni-operator", runMain)
}
