// Package testenv starts a real Kubernetes control plane (etcd +
// kube-apiserver, through internal/kit/controlplane) for integration tests,
// with the project's CRDs installed.
//
// One control plane per test package: call Main from TestMain; where a
// single test needs one, StartForTest from that test.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
	"github.com/eni-operator/eni-operator/internal/kit/controlplane"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	cp     *controlplane.ControlPlane
}

// Shared is one control plane for the tests of a package, started by
// the first test that asks for it (Env): the package's pure tests start
// none, and run where the binaries were never built.
type Shared struct {
	mu      sync.Mutex
	env     *Env
	err     error
	unwatch func()
}

// Env returns the package's control plane, starting it on first use;
// a failure to start fails every test that asks.
func (s *Shared) Env(t testing.TB) *Env {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env == nil && s.err == nil {
		s.env, s.err = Start()
		if s.err == nil {
			s.unwatch = stopOnSignal(s.env)
		}
	}
	if s.err != nil {
		t.Fatal("testenv:", s.err)
	}
	return s.env
}

// stop stops the control plane if one was started.
func (s *Shared) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env == nil {
		return nil
	}
	s.unwatch()
	return s.env.Stop()
}

// Main runs the package's tests and stops the control plane shared if
// one of them started it. It is stopped on SIGINT/SIGTERM too, so an
// interrupted run leaves no apiserver or etcd behind.
//
// Controllers started by the tests log to Logger.
func Main(m *testing.M, shared *Shared) {
	ctrllog.SetLogger(Logger())
	code := m.Run()
	if err := shared.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// StartForTest starts a control plane for t alone and stops it when t
// ends, or on SIGINT/SIGTERM. It is for a package where a single test
// needs one: that package needs no TestMain and no package variable, and
// its other tests neither start nor wait for etcd and kube-apiserver.
// Where several tests need one, Main shares one between them.
func StartForTest(t testing.TB) *Env {
	t.Helper()
	ctrllog.SetLogger(Logger())
	e, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	unwatch := stopOnSignal(e)
	// Cleanups run last registered first: whatever the test starts
	// against the control plane afterwards is stopped before it.
	t.Cleanup(func() {
		unwatch()
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return e
}

// stopOnSignal stops e and exits on SIGINT/SIGTERM, so an interrupted
// run leaves no apiserver or etcd behind, until the returned func is
// called.
func stopOnSignal(e *Env) (unwatch func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			_ = e.Stop()
			os.Exit(1)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// Logger is the tests' log: quiet, or controller-runtime's development
// log when TEST_LOG is set.
func Logger() logr.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return zap.New(zap.UseDevMode(true))
	}
	return logr.Discard()
}

// Start starts etcd and kube-apiserver with the CRDs of config/crd/bases
// installed. The binaries come from KUBEBUILDER_ASSETS or, when that is
// unset, from hack/control-plane-binaries.sh (built once, then cached).
func Start() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := ControlPlaneAssets(root)
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(context.Background(), controlplane.Options{
		Bins: assets, CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		return nil, fmt.Errorf("starting the control plane from %s: %w", assets, err)
	}
	// As envtest's: no client-side throttling, client-go's user agent.
	cfg := cp.Admin()
	cfg.QPS, cfg.Burst, cfg.UserAgent = 1000, 2000, ""
	return &Env{Config: cfg, cp: cp}, nil
}

// Stop stops the control plane and removes its data.
func (e *Env) Stop() error { return e.cp.Stop() }

// RepoRoot finds the module root by walking up from the working
// directory to the go.mod of this project.
func RepoRoot() (string, error) { return cachedbin.RepoRoot() }

// Root is RepoRoot for a test, which fails when there is none.
func Root(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
