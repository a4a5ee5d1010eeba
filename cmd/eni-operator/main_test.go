package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// Flags of k8s-eni-tagger and aws-multi-eni-controller users keep working,
// with their defaults.
func TestOriginalFlagsParse(t *testing.T) {
	c, err := parse([]string{
		"--annotation-key=eni-tagger.io/tags", "--watch-namespace=shop", "--max-concurrent-reconciles=4",
		"--dry-run", "--allow-shared-eni-tagging", "--subnet-ids=subnet-1,subnet-2", "--enable-eni-cache=false",
		"--enable-cache-configmap", "--cache-batch-interval=5s", "--cache-batch-size=50",
		"--aws-rate-limit-qps=5", "--aws-rate-limit-burst=7", "--pod-rate-limit-qps=0.5", "--pod-rate-limit-burst=2",
		"--tag-namespace=enable", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
		"--leader-elect", "--pprof-bind-address=0", "--zap-log-level=debug",
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	o := c.tagger
	if o.WatchNamespace != "shop" || o.MaxConcurrentReconciles != 4 || !o.DryRun || !o.AllowSharedENITagging ||
		len(o.SubnetIDs) != 2 || o.EnableENICache || o.CacheBatchInterval != 5*time.Second || o.CacheBatchSize != 50 ||
		o.PodRateLimitQPS != 0.5 || o.PodRateLimitBurst != 2 || o.TagNamespace != "enable" {
		t.Fatalf("tagger options %+v", o)
	}
	if c.ec2.QPS != 5 || c.ec2.Burst != 7 || c.metricsAddr != ":9090" || !c.leaderElect {
		t.Fatalf("config %+v", c)
	}

	d, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if d.ec2.QPS != 10 || d.ec2.Burst != 20 || d.tagger.AnnotationKey != "eni-tagger.io/tags" ||
		d.tagger.CacheBatchInterval != 2*time.Second || d.tagger.CacheBatchSize != 20 || d.metricsAddr != ":8090" {
		t.Fatalf("defaults %+v", d)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	for _, args := range [][]string{{"--subnet-ids=vpc-1"}, {"--annotation-key="}, {"--tag-namespace=aws"}, {"--nope"}, {"extra"}} {
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
		if !strings.Contains(out.String(), strings.TrimPrefix(f, "-")) {
			t.Errorf("--help does not mention %s", f)
		}
	}
}
