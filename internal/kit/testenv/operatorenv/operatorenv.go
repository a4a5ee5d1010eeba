// Package operatorenv runs the whole operator in a test — pod tagger,
// NodeENI controller and collector, built by operator.NewManager exactly
// as the binary builds it — against an EC2 endpoint, for the tests that
// check behaviour end to end. It is apart from internal/kit/testenv because
// the operator's own packages' tests use that kit.
package operatorenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/operator"
	"github.com/eni-operator/eni-operator/internal/tagger"
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
	c.Tagger.LedgerBatchInterval = 100 * time.Millisecond
	// Several tests of one package run the whole operator in turn.
	c.Tagger.SkipNameValidation, c.NodeENI.SkipNameValidation = true, true
	c.NodeENI.ResyncInterval = time.Second
	c.NodeENI.CollectorGracePeriod = time.Second
	c.NodeENI.DetachPollInterval = 100 * time.Millisecond
	c.NodeENI.MinCatalogRefresh = 200 * time.Millisecond
	return c
}

// Start points the process's AWS environment at endpoint for the test's
// lifetime (the operator finds it the way it finds AWS), builds the operator from c with restCfg
// and runs it until the test ends; stopping with an error fails the test.
func Start(t testing.TB, restCfg *rest.Config, endpoint string, c operator.Config) {
	t.Helper()
	for k, v := range testenv.AWSEnv(endpoint) {
		t.Setenv(k, v)
	}
	Run(t, restCfg, c)
}

// Run builds the operator from c with restCfg, finding AWS through the
// process's environment as it is (a test that sets up credentials of its
// own), and runs it until the test ends; stopping with an error fails the
// test.
func Run(t testing.TB, restCfg *rest.Config, c operator.Config) {
	t.Helper()
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

// OneNode is the Kubernetes side of an end-to-end test of the whole
// operator on one node, as the security and observability tests set it
// up: a control plane of the test's own, the namespaces of the workload
// (<cluster>-apps) and of the operator (<cluster>-ops), the node
// testenv.NodeName(0), labelled role=multus, and the NodeENI multus that
// selects it (security group multus, subnet multus-a).
type OneNode struct {
	Env     *testenv.Env
	K8s     client.Client
	Cluster string // the operator's cluster name
	AppsNS  string // the workload's pods
	OpsNS   string // the operator's own namespace (ledger, leases)
	Node    string
	NodeENI *v1alpha1.NodeENI
}

// NewOneNode starts the control plane and creates the namespaces, the
// node on instance and the NodeENI.
func NewOneNode(t testing.TB, cluster, instance string) *OneNode {
	t.Helper()
	env := testenv.StartForTest(t)
	o := &OneNode{Env: env, K8s: testenv.Client(t, env.Config), Cluster: cluster,
		AppsNS: cluster + "-apps", OpsNS: cluster + "-ops", Node: testenv.NodeName(0)}
	testenv.CreateNamespaces(t, o.K8s, o.AppsNS, o.OpsNS)
	testenv.CreateNode(t, o.K8s, testenv.Node{Name: o.Node, Instance: instance, Zone: "us-east-1a", Labels: map[string]string{"role": "multus"}})
	o.NodeENI = testenv.CreateNodeENI(t, o.K8s, "multus", "multus", "multus-a")
	return o
}

// Pod creates a running pod of the workload on the node, at ip, whose
// tagger annotation asks for tags; a pod that cannot be created fails the
// test.
func (o *OneNode) Pod(t testing.TB, name, ip, tags string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.AppsNS,
		Annotations: map[string]string{tagger.DefaultAnnotationKey: tags}},
		Spec: corev1.PodSpec{NodeName: o.Node, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	if !testenv.CreatePod(t, o.K8s, pod, testenv.Running(ip)) {
		t.FailNow()
	}
}

// Config is Config for this cluster, in vpc.
func (o *OneNode) Config(vpc string) operator.Config { return Config(o.Cluster, vpc, o.OpsNS) }

// Start is Start on this cluster's control plane.
func (o *OneNode) Start(t testing.TB, endpoint string, c operator.Config) {
	t.Helper()
	Start(t, o.Env.Config, endpoint, c)
}
