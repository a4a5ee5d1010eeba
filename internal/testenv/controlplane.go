package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is etcd and kube-apiserver run by the test itself, not by
// envtest, so each can be killed (SIGKILL, nothing flushed) and started
// again on the same address with the same data directory and the same
// certificates: a real restart, which clients must live through without
// being given a new CA or a new address. The API server writes an audit
// log (every request at Metadata level: who, what, when, answer) that
// tests read as evidence of who wrote what and how often watchers
// relisted.
type ControlPlane struct {
	// Dir holds etcd's data, the certificates and the logs.
	Dir string
	// Host is the API server's URL, the same across restarts.
	Host string

	bins             string
	etcdURL, peerURL string
	apiPort          string
	pki              *pki

	mu        sync.Mutex
	etcd, api *child
	apiStarts int
}

// child is a running binary of the control plane; done closes when it
// exits.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// waitReady polls url with hc until it answers 200, failing the test
// when the child exits first or two minutes pass.
func (c *child) waitReady(t testing.TB, what string, hc *http.Client, url string) {
	t.Helper()
	Eventually(t, what, 2*time.Minute, func() (bool, string) {
		select {
		case <-c.done:
			t.Fatalf("%s: the process exited (%v)", what, c.cmd.ProcessState)
		default:
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// StartControlPlane starts etcd and kube-apiserver for t (stopped when it
// ends) and installs the project's CRDs.
func StartControlPlane(t testing.TB) *ControlPlane {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := ControlPlaneAssets(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := newPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{Dir: dir, bins: bins, pki: p,
		etcdURL: "http://" + FreeAddr(t), peerURL: "http://" + FreeAddr(t), apiPort: port(FreeAddr(t))}
	cp.Host = "https://127.0.0.1:" + cp.apiPort
	t.Cleanup(func() {
		cp.KillAPIServer()
		cp.KillEtcd()
	})
	cp.StartEtcd(t)
	cp.StartAPIServer(t)
	if _, err := envtest.InstallCRDs(cp.Admin(), envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}}); err != nil {
		t.Fatal(err)
	}
	return cp
}

// auditPolicy records every request once, when its answer is known,
// without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// Admin reaches the API server as a cluster administrator.
func (cp *ControlPlane) Admin() *rest.Config { return cp.User("admin") }

// User reaches the API server as user name (group system:masters) with a
// client certificate of its own, so the audit log tells its requests
// from everyone else's.
func (cp *ControlPlane) User(name string) *rest.Config {
	crt, key := cp.pki.client(name)
	return &rest.Config{Host: cp.Host, UserAgent: name, TLSClientConfig: rest.TLSClientConfig{
		CAData: cp.pki.caPEM, CertData: crt, KeyData: key}}
}

// StartEtcd starts etcd on its address and data directory.
func (cp *ControlPlane) StartEtcd(t testing.TB) {
	t.Helper()
	c := cp.start(t, "etcd", "etcd.log",
		"--name=default", "--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+cp.etcdURL, "--advertise-client-urls="+cp.etcdURL,
		"--listen-peer-urls="+cp.peerURL, "--initial-advertise-peer-urls="+cp.peerURL,
		"--initial-cluster=default="+cp.peerURL, "--unsafe-no-fsync=true")
	cp.mu.Lock()
	cp.etcd = c
	cp.mu.Unlock()
	c.waitReady(t, "etcd healthy", http.DefaultClient, cp.etcdURL+"/health")
}

// StartAPIServer starts kube-apiserver on its port with the same
// certificates, and waits until it is ready. Each start writes its own
// audit log file.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	cp.mu.Lock()
	n := cp.apiStarts
	cp.apiStarts++
	cp.mu.Unlock()
	f := cp.pki.files
	proc := cp.start(t, "kube-apiserver", fmt.Sprintf("kube-apiserver-%d.log", n),
		"--etcd-servers="+cp.etcdURL, "--bind-address=127.0.0.1",
		"--secure-port="+cp.apiPort, "--cert-dir="+filepath.Join(cp.Dir, "apiserver"),
		"--tls-cert-file="+f.servingCert, "--tls-private-key-file="+f.servingKey, "--client-ca-file="+f.ca,
		"--service-account-issuer="+cp.Host+"/", "--service-account-key-file="+f.saKey,
		"--service-account-signing-key-file="+f.saKey, "--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
		"--audit-policy-file="+filepath.Join(cp.Dir, "audit-policy.yaml"),
		"--audit-log-path="+filepath.Join(cp.Dir, fmt.Sprintf("audit-%d.log", n)), "--audit-log-format=json")
	cp.mu.Lock()
	cp.api = proc
	cp.mu.Unlock()
	c, err := rest.HTTPClientFor(cp.Admin())
	if err != nil {
		t.Fatal(err)
	}
	proc.waitReady(t, "kube-apiserver ready", c, cp.Host+"/readyz")
}

// KillEtcd kills etcd with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillEtcd() { cp.kill(&cp.etcd) }

// KillAPIServer kills kube-apiserver with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillAPIServer() { cp.kill(&cp.api) }

func (cp *ControlPlane) kill(which **child) {
	cp.mu.Lock()
	c := *which
	*which = nil
	cp.mu.Unlock()
	if c == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// start runs one of the control plane's binaries, its output appended to
// logName in Dir (shown when the test fails). Pdeathsig kills it should
// the test binary die without its cleanups.
func (cp *ControlPlane) start(t testing.TB, bin, logName string, args ...string) *child {
	t.Helper()
	logPath := filepath.Join(cp.Dir, logName)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), filepath.Join(cp.bins, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_ = log.Close() // the child holds its own descriptor
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s (last 3000 bytes):\n%s", logName, tail(b, 3000))
		}
	})
	return c
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func port(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
