package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
)

// ControlPlaneAssets returns the directory holding kube-apiserver, etcd
// and kubectl: KUBEBUILDER_ASSETS when set (make test sets it once for
// every package), else hack/control-plane-binaries.sh's build for the
// repository at root (built once, then cached).
func ControlPlaneAssets(root string) (string, error) {
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		return assets, nil
	}
	return cachedbin.ControlPlane(context.Background(), root, os.Stderr)
}

// Kustomize builds config/<dir> of the repository with kubectl's
// kustomize (the one docs/install.md tells users to apply with) and returns
// the manifests; a failed build fails the test with kubectl's message.
func Kustomize(t testing.TB, dir string) []byte {
	t.Helper()
	root := Root(t)
	assets, err := ControlPlaneAssets(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", dir)).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("kubectl kustomize config/%s: %v\n%s", dir, err, exit.Stderr)
		}
		t.Fatalf("kubectl kustomize config/%s: %v", dir, err)
	}
	return out
}
