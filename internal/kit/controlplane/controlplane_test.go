package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

func bins(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("KUBEBUILDER_ASSETS"); b != "" {
		return b
	}
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := cachedbin.ControlPlane(context.Background(), root, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// etcd and kube-apiserver are killed and started again on the same data,
// certificates and address: what was written before is read back through
// a client made before, and through a kubeconfig.
func TestKillAndRestart(t *testing.T) {
	ctx := context.Background()
	cp, err := Start(ctx, Options{Bins: bins(t), Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := cp.Dir
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Stop left %s: %v", dir, err)
		}
	}()
	cs := kubernetes.NewForConfigOrDie(cp.User("someone", "system:masters"))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.KillAPIServer()
	cp.KillEtcd()
	if err := cp.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	kc, err := cp.Kubeconfig("admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("through the kubeconfig: %v", err)
	}
	for _, f := range []string{"audit-0.log", "audit-1.log", "kube-apiserver-1.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("one file per API server start: %v", err)
		}
	}
}

// A user's forbidden request is refused: RBAC is on.
func TestUserWithoutRole(t *testing.T) {
	ctx := context.Background()
	cp, err := Start(ctx, Options{Bins: bins(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.Stop() }()
	_, err = kubernetes.NewForConfigOrDie(cp.User("nobody")).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err == nil {
		t.Fatal("a user without a role listed namespaces")
	}
}

func TestMergeArgs(t *testing.T) {
	got := mergeArgs([]string{"--a=1", "--b=2"}, []string{"--b=3", "--c", "--a="})
	if want := []string{"--a=", "--b=3", "--c"}; !slices.Equal(got, want) {
		t.Errorf("mergeArgs = %v, want %v", got, want)
	}
}
