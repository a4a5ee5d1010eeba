package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/eni-operator/eni-operator/internal/kit/controlplane"
)

// ControlPlane is etcd and kube-apiserver run for one test
// (internal/kit/controlplane), each of which the test can kill (SIGKILL,
// nothing flushed) and start again on the same address, data and
// certificates: a real restart. The API server writes an audit log
// (every request at Metadata level) that tests read as evidence of who
// wrote what and how often watchers relisted.
type ControlPlane struct {
	// Dir holds etcd's data, the certificates and the logs.
	Dir string
	// Host is the API server's URL, the same across restarts.
	Host string

	cp *controlplane.ControlPlane
}

// StartControlPlane starts etcd and kube-apiserver for t (stopped when it
// ends) and installs the project's CRDs.
func StartControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	root := Root(t)
	return startControlPlane(t, controlplane.Options{Audit: true, CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}})
}

// StartEmptyControlPlane starts etcd and kube-apiserver for t with
// nothing installed, not even the CRDs: a fresh cluster.
func StartEmptyControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	return startControlPlane(t, controlplane.Options{})
}

func startControlPlane(t testing.TB, o controlplane.Options) *ControlPlane {
	t.Helper()
	bins, err := ControlPlaneAssets(Root(t))
	if err != nil {
		t.Fatal(err)
	}
	o.Bins, o.Dir = bins, t.TempDir()
	cp, err := controlplane.New(o)
	if err != nil {
		t.Fatal(err)
	}
	w := &ControlPlane{Dir: cp.Dir, Host: cp.Host, cp: cp}
	t.Cleanup(func() {
		w.KillAPIServer()
		w.KillEtcd()
		_ = cp.Stop()
		if t.Failed() {
			for _, log := range cp.Logs() {
				t.Logf("%s (last 3000 bytes):\n%s", filepath.Base(log), controlplane.Tail(log, 3000))
			}
		}
	})
	w.StartEtcd(t)
	w.StartAPIServer(t)
	if len(o.CRDDirs) > 0 {
		if err := cp.InstallCRDs(); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// Admin reaches the API server as a cluster administrator.
func (cp *ControlPlane) Admin() *rest.Config { return cp.User("admin") }

// User reaches the API server as user name (group system:masters) with a
// client certificate of its own, so the audit log tells its requests
// from everyone else's.
func (cp *ControlPlane) User(name string) *rest.Config { return cp.cp.User(name, "system:masters") }

// Kubeconfig writes an administrator's kubeconfig (certificates
// embedded) into the test's temporary directory and returns its path.
func (cp *ControlPlane) Kubeconfig(t testing.TB) string {
	t.Helper()
	b, err := cp.cp.Kubeconfig("admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// StartEtcd starts etcd on its address and data directory.
func (cp *ControlPlane) StartEtcd(t testing.TB) {
	t.Helper()
	if err := cp.cp.StartEtcd(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// StartAPIServer starts kube-apiserver on its port with the same
// certificates, and waits until it is ready. Each start writes its own
// audit log file.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	if err := cp.cp.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// KillEtcd kills etcd with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillEtcd() { cp.cp.KillEtcd() }

// KillAPIServer kills kube-apiserver with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillAPIServer() { cp.cp.KillAPIServer() }
