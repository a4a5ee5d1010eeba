// Package cachedbin finds the tools the project builds from the Go module
// proxy and caches between runs (kube-apiserver, etcd and kubectl; helm),
// building them on first use through the scripts in hack/. The sandbox
// and the tests share it, so both find the same cache.
package cachedbin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ControlPlane returns the directory holding kube-apiserver, etcd and
// kubectl (usable as KUBEBUILDER_ASSETS), running
// hack/control-plane-binaries.sh under root. The script's progress and a
// heartbeat every interval go to progress (nil: os.Stderr) — a cold build
// takes about ten minutes and would otherwise look hung.
func ControlPlane(ctx context.Context, root string, progress io.Writer) (string, error) {
	return run(ctx, filepath.Join(root, "hack", "control-plane-binaries.sh"), "control-plane binaries", progress)
}

// Helm returns the path of the helm binary, running hack/helm-binary.sh
// under root (built once, then cached).
func Helm(ctx context.Context, root string, progress io.Writer) (string, error) {
	return run(ctx, filepath.Join(root, "hack", "helm-binary.sh"), "helm", progress)
}

// heartbeat is how often a running build says it is still at work.
const heartbeat = 30 * time.Second

func run(ctx context.Context, script, what string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = os.Stderr
	}
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = progress
	done := make(chan struct{})
	defer close(done)
	start := time.Now()
	go func() {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(progress, "  … still building %s (%s elapsed; only the first run builds)\n", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(script), err)
	}
	path := strings.TrimSpace(string(out))
	if path == "" {
		return "", fmt.Errorf("%s printed no path", filepath.Base(script))
	}
	return path, nil
}

// RepoRoot finds the module root by walking up from the working
// directory to the go.mod of this project.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/eni-operator/eni-operator\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the eni-operator module root above the working directory (run from inside the repository)")
		}
		dir = parent
	}
}
