package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

func noEnvironment(t *testing.T) string {
	t.Helper()
	return clitest.NoCluster(t)
}

func TestNothingToLoad(t *testing.T) {
	noEnvironment(t)
	_, err := Load("")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--kubeconfig") ||
		!strings.Contains(err.Error(), "KUBECONFIG") || !strings.Contains(err.Error(), "ServiceAccount") ||
		strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Fatalf("%v", err)
	}
}

func TestFiles(t *testing.T) {
	home := noEnvironment(t)
	good := filepath.Join(home, "good")
	if err := os.WriteFile(good, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(home, "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(home, "garbage")
	if err := os.WriteFile(garbage, []byte("{{{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(good); err != nil || cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "t" {
		t.Fatalf("%+v %v", cfg, err)
	}
	t.Setenv("KUBECONFIG", good)
	if cfg, err := Load(""); err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("KUBECONFIG: %+v %v", cfg, err)
	}
	t.Setenv("KUBECONFIG", "")
	for _, p := range []string{filepath.Join(home, "missing"), empty, garbage} {
		_, err := Load(p)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), Help) {
			t.Errorf("%s: %v", p, err)
		}
	}
	// ~/.kube/config is the last resort.
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(""); err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("~/.kube/config: %+v %v", cfg, err)
	}
}
