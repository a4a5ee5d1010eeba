package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared Shared

func TestMain(m *testing.M) { Main(m, &shared) }

// The control plane is real: it reports the version the binaries were
// built for and persists objects.
func TestControlPlaneIsReal(t *testing.T) {
	env := shared.Env(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.1" {
		t.Fatalf("server version %q, want v1.37.1 (stamped at build time)", v.GitVersion)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testenv"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "testenv", metav1.GetOptions{})
	if err != nil || ns.UID == "" {
		t.Fatalf("namespace not persisted: %v", err)
	}
}

// An Outage cuts clients off the API server and lets them back.
func TestOutage(t *testing.T) {
	o, cfg, err := NewOutage(shared.Env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = o.Close() }()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Discovery().ServerVersion(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	o.Down()
	if _, err := c.Discovery().ServerVersion(); err == nil {
		t.Fatal("the API server answers during the outage")
	}
	o.Up(t)
	if _, err := c.Discovery().ServerVersion(); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}
