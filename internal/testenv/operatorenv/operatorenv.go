// Package operatorenv runs the whole operator in a test — pod tagger,
// NodeENI controller and collector, built by operator.NewManager exactly
// as the binary builds it — against an EC2 endpoint, for the tests that
// check behaviour end to end. It is apart from internal/testenv because
// the operator's own packages' tests use that kit.
package operatorenv

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/eni-operator/eni-operator/internal/operator"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

// Config is the operator's default configuration for cluster, VPC and the
// operator's namespace, with its endpoints off and its intervals cut so a
// scenario takes seconds rather than minutes.
func Config(cluster, vpc, namespace string) operator.Config {
	c := operator.DefaultConfig()
	c.MetricsAddr, c.ProbeAddr, c.PprofAddr = "0", "0", "0"
	c.ClusterName = cluster
	c.EC2.VPCID = vpc
	c.Tagger.Namespace = namespace
	c.Tagger.InventoryInterval = time.Second
	c.Tagger.CacheBatchInterval = 100 * time.Millisecond
	c.NodeENI.ResyncInterval = time.Second
	c.NodeENI.CollectorGracePeriod = time.Second
	c.NodeENI.DetachPollInterval = 100 * time.Millisecond
	c.NodeENI.MinCatalogRefresh = 200 * time.Millisecond
	return c
}

// Start points the process's AWS environment at endpoint (the operator
// finds it the way it finds AWS), builds the operator from c with restCfg
// and runs it until the test ends; stopping with an error fails the test.
func Start(t testing.TB, restCfg *rest.Config, endpoint string, c operator.Config) {
	t.Helper()
	testenv.SetAWSEnv(t, endpoint)
	ctx, stop := context.WithCancel(context.Background())
	mgr, err := operator.NewManager(ctx, restCfg, c)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
}
