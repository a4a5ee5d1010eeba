package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

var env *Env

func TestMain(m *testing.M) { Main(m, &env) }

// The control plane is real: it reports the version the binaries were
// built for and persists objects.
func TestControlPlaneIsReal(t *testing.T) {
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
