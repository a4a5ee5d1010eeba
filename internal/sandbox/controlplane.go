package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlane is etcd and kube-apiserver, run by envtest.
type controlPlane struct {
	cfg        *rest.Config
	kubeconfig []byte
	stop       chan struct{}
	stopped    chan error
}

// startControlPlane starts etcd and kube-apiserver (the binaries in
// assets) and installs the CRDs of crdDir.
//
// The processes die with the sandbox even when it is killed with SIGKILL:
// envtest runs them through links to the sandbox's own executable, which
// sets a parent death signal before exec'ing the real binary
// (ExecControlPlaneChild). The kernel sends that signal when the parent
// THREAD exits, not the process: a Go program's goroutines hop between
// threads, and a thread can end while the program goes on. So envtest
// starts (forks) them from a goroutine locked to its OS thread, which
// lives until the control plane is stopped — stopped from the same
// goroutine. It never unlocks: when it returns its thread exits, and any
// process still running gets SIGKILL.
func startControlPlane(assets, crdDir string) (*controlPlane, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// In TMPDIR, the sandbox's state directory.
	links, err := os.MkdirTemp("", "control-plane-bin-")
	if err != nil {
		return nil, err
	}
	for _, name := range wrappedBinaries {
		if err := os.Symlink(self, filepath.Join(links, name)); err != nil {
			return nil, err
		}
	}
	for k, v := range map[string]string{envExecDir: assets, envExecParent: strconv.Itoa(os.Getpid())} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
		ControlPlane: envtest.ControlPlane{
			Etcd:        &envtest.Etcd{Path: filepath.Join(links, "etcd")},
			APIServer:   &envtest.APIServer{Path: filepath.Join(links, "kube-apiserver")},
			KubectlPath: filepath.Join(assets, "kubectl"),
		},
	}
	cp := &controlPlane{stop: make(chan struct{}), stopped: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		defer func() { _ = os.RemoveAll(links) }()
		cfg, err := env.Start()
		if err != nil {
			_ = env.Stop()
			started <- fmt.Errorf("starting the control plane: %w", err)
			cp.stopped <- nil
			return
		}
		cp.cfg, cp.kubeconfig = cfg, env.KubeConfig
		started <- nil
		<-cp.stop
		cp.stopped <- env.Stop()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return cp, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (cp *controlPlane) Stop() error {
	close(cp.stop)
	return <-cp.stopped
}
