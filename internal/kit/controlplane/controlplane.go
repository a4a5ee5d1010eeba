// Package controlplane runs etcd and kube-apiserver: the one starter of
// the tests (internal/kit/testenv), the sandbox and the e2e node. Each can be
// killed and started again on the same data, certificates and address,
// and every child dies with the process that started it, even on SIGKILL.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options says where the binaries are and how to run them.
type Options struct {
	// Bins holds etcd and kube-apiserver.
	Bins string
	// Dir holds etcd's data, the PKI (Dir/pki) and the audit logs; empty,
	// a new temporary directory that Stop removes.
	Dir string
	// LogDir holds the processes' logs; default Dir.
	LogDir string
	// BindAddress is the API server's address; default 127.0.0.1.
	BindAddress string
	// Hosts are extra names and addresses of the API server's certificate.
	Hosts []string
	// ServiceAccountIssuer defaults to Host + "/"; ServiceCIDR to
	// 10.0.0.0/24.
	ServiceAccountIssuer, ServiceCIDR string
	// Audit writes an audit log (every request at Metadata level) per API
	// server start: Dir/audit-N.log, N from 0.
	Audit bool
	// APIServerArgs ("--flag=value") replace the default of the same flag
	// or are added: kube-apiserver appends the values of a repeated list
	// flag rather than taking the last.
	APIServerArgs []string
	// CRDDirs are installed by Start.
	CRDDirs []string
}

// ControlPlane is etcd and kube-apiserver, started by New and the Start
// methods, stopped by Stop.
type ControlPlane struct {
	// Host is the API server's URL, the same across restarts.
	Host string
	// Dir is Options.Dir.
	Dir string
	// PKI holds the CA the API server trusts, in Dir/pki.
	PKI *PKI

	opts                      Options
	ownDir                    bool
	etcdURL, peerURL, apiPort string
	launcher                  *Launcher

	mu        sync.Mutex
	etcd, api *Process
	apiStarts int
	users     map[string]*rest.Config
}

// Start starts etcd and kube-apiserver and installs o.CRDDirs; on error
// nothing is left running.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	cp, err := New(o)
	if err != nil {
		return nil, err
	}
	if err := cp.start(ctx); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context) error {
	if err := cp.StartEtcd(ctx); err != nil {
		return err
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		return err
	}
	return cp.InstallCRDs()
}

// InstallCRDs installs the CRDs of Options.CRDDirs and waits until the
// API server serves them.
func (cp *ControlPlane) InstallCRDs() error {
	if len(cp.opts.CRDDirs) == 0 {
		return nil
	}
	_, err := envtest.InstallCRDs(cp.Admin(), envtest.CRDInstallOptions{Paths: cp.opts.CRDDirs, ErrorIfPathMissing: true})
	return err
}

// New makes the directory, the certificates and the ports, and starts no
// process: the caller may issue more certificates and add API server
// arguments first. Stop releases it.
func New(o Options) (*ControlPlane, error) {
	cp := &ControlPlane{opts: o, users: map[string]*rest.Config{}}
	if err := cp.defaults(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok && cp.ownDir {
			_ = os.RemoveAll(cp.Dir)
		}
	}()
	if err := os.MkdirAll(cp.opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if cp.PKI, err = NewPKI(filepath.Join(cp.Dir, "pki")); err != nil {
		return nil, err
	}
	if err := cp.ports(); err != nil {
		return nil, err
	}
	hosts := append([]string{cp.opts.BindAddress, "127.0.0.1", "localhost"}, cp.opts.Hosts...)
	if err := cp.PKI.Issue("apiserver", "kube-apiserver", nil, hosts...); err != nil {
		return nil, err
	}
	if cp.opts.ServiceAccountIssuer == "" {
		cp.opts.ServiceAccountIssuer = cp.Host + "/"
	}
	if cp.opts.Audit {
		if err := os.WriteFile(filepath.Join(cp.Dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return nil, err
		}
	}
	cp.launcher = NewLauncher()
	ok = true
	return cp, nil
}

func (cp *ControlPlane) defaults() error {
	o := &cp.opts
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "control-plane-")
		if err != nil {
			return err
		}
		o.Dir, cp.ownDir = dir, true
	}
	if o.LogDir == "" {
		o.LogDir = o.Dir
	}
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.0.0.0/24"
	}
	cp.Dir = o.Dir
	return os.MkdirAll(o.Dir, 0o700)
}

// ports picks etcd's client and peer ports and the API server's, free
// right now; they stay the same across restarts.
func (cp *ControlPlane) ports() error {
	var ports [3]string
	for i, host := range []string{"127.0.0.1", "127.0.0.1", cp.opts.BindAddress} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return err
		}
		ports[i] = strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		_ = l.Close()
	}
	cp.etcdURL, cp.peerURL = "http://127.0.0.1:"+ports[0], "http://127.0.0.1:"+ports[1]
	cp.apiPort = ports[2]
	cp.Host = "https://" + net.JoinHostPort(cp.opts.BindAddress, cp.apiPort)
	return nil
}

// auditPolicy records every request once, when its answer is known,
// without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// AddAPIServerArgs adds to Options.APIServerArgs, for the next API
// server start.
func (cp *ControlPlane) AddAPIServerArgs(args ...string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.opts.APIServerArgs = append(cp.opts.APIServerArgs, args...)
}

// StartEtcd starts etcd on its ports and data directory and waits until
// it is healthy.
func (cp *ControlPlane) StartEtcd(ctx context.Context) error {
	c, err := cp.launcher.Start("etcd", filepath.Join(cp.opts.Bins, "etcd"), filepath.Join(cp.opts.LogDir, "etcd.log"),
		"--name=default", "--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+cp.etcdURL, "--advertise-client-urls="+cp.etcdURL,
		"--listen-peer-urls="+cp.peerURL, "--initial-advertise-peer-urls="+cp.peerURL,
		"--initial-cluster=default="+cp.peerURL, "--unsafe-no-fsync=true")
	if err != nil {
		return err
	}
	cp.mu.Lock()
	cp.etcd = c
	cp.mu.Unlock()
	hc := &http.Client{Timeout: 2 * time.Second}
	return c.WaitUntil(ctx, time.Minute, "etcd healthy", func() error { return HTTPOK(hc, cp.etcdURL+"/health") })
}

// StartAPIServer starts kube-apiserver on its port with the same
// certificates and waits until it is ready. Each start logs to
// kube-apiserver-N.log (and audit-N.log), N from 0.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	cp.mu.Lock()
	n := cp.apiStarts
	cp.apiStarts++
	args := cp.apiServerArgs(n)
	cp.mu.Unlock()
	c, err := cp.launcher.Start("kube-apiserver", filepath.Join(cp.opts.Bins, "kube-apiserver"),
		filepath.Join(cp.opts.LogDir, fmt.Sprintf("kube-apiserver-%d.log", n)), args...)
	if err != nil {
		return err
	}
	cp.mu.Lock()
	cp.api = c
	cp.mu.Unlock()
	hc, err := rest.HTTPClientFor(cp.Admin())
	if err != nil {
		return err
	}
	hc.Timeout = 5 * time.Second
	return c.WaitUntil(ctx, 2*time.Minute, "kube-apiserver ready", func() error { return HTTPOK(hc, cp.Host+"/readyz") })
}

// apiServerArgs are the defaults for start n, Options.APIServerArgs
// replacing those of the same flag.
func (cp *ControlPlane) apiServerArgs(n int) []string {
	o, pki := cp.opts, cp.PKI.Path
	args := []string{
		"--etcd-servers=" + cp.etcdURL, "--bind-address=" + o.BindAddress, "--secure-port=" + cp.apiPort,
		"--cert-dir=" + filepath.Join(cp.Dir, "apiserver"),
		"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-issuer=" + o.ServiceAccountIssuer, "--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"), "--service-cluster-ip-range=" + o.ServiceCIDR,
		"--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
	}
	if o.Audit {
		args = append(args, "--audit-policy-file="+filepath.Join(cp.Dir, "audit-policy.yaml"),
			"--audit-log-path="+filepath.Join(cp.Dir, fmt.Sprintf("audit-%d.log", n)), "--audit-log-format=json")
	}
	return mergeArgs(args, o.APIServerArgs)
}

// mergeArgs puts each of extra in place of the argument of args with the
// same flag, or after them.
func mergeArgs(args, extra []string) []string {
	flag := func(a string) string { f, _, _ := strings.Cut(a, "="); return f }
	out := append([]string(nil), args...)
	for _, e := range extra {
		replaced := false
		for i, a := range out {
			if flag(a) == flag(e) {
				out[i], replaced = e, true
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

// KillEtcd kills etcd with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillEtcd() { cp.take(&cp.etcd, (*Process).Kill) }

// KillAPIServer kills kube-apiserver with SIGKILL and waits for it to go.
func (cp *ControlPlane) KillAPIServer() { cp.take(&cp.api, (*Process).Kill) }

func (cp *ControlPlane) take(which **Process, end func(*Process)) {
	cp.mu.Lock()
	c := *which
	*which = nil
	cp.mu.Unlock()
	if c != nil {
		end(c)
	}
}

// Stop stops kube-apiserver, then etcd (SIGTERM, SIGKILL after ten
// seconds), and removes Dir if New made it. Stopping again does nothing.
func (cp *ControlPlane) Stop() error {
	stop := func(p *Process) { p.Stop(10 * time.Second) }
	cp.take(&cp.api, stop)
	cp.take(&cp.etcd, stop)
	cp.launcher.Close()
	if cp.ownDir {
		return os.RemoveAll(cp.Dir)
	}
	return nil
}

// Logs are the paths of the processes' logs, oldest start first.
func (cp *ControlPlane) Logs() []string {
	logs := []string{filepath.Join(cp.opts.LogDir, "etcd.log")}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for n := range cp.apiStarts {
		logs = append(logs, filepath.Join(cp.opts.LogDir, fmt.Sprintf("kube-apiserver-%d.log", n)))
	}
	return logs
}

// Admin reaches the API server as a cluster administrator.
func (cp *ControlPlane) Admin() *rest.Config { return cp.User("admin", "system:masters") }

// User reaches the API server as user name in groups with a client
// certificate of its own (made once), so the audit log tells its
// requests from everyone else's.
func (cp *ControlPlane) User(name string, groups ...string) *rest.Config {
	key := name + "\x00" + strings.Join(groups, "\x00")
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cfg, ok := cp.users[key]; ok {
		return rest.CopyConfig(cfg)
	}
	crt, k, err := cp.PKI.Cert(name, groups)
	if err != nil {
		panic(err) // signing with the CA New made cannot fail
	}
	cfg := &rest.Config{Host: cp.Host, UserAgent: name, TLSClientConfig: rest.TLSClientConfig{
		CAData: cp.PKI.CA(), CertData: crt, KeyData: k}}
	cp.users[key] = cfg
	return rest.CopyConfig(cfg)
}

// Kubeconfig is a self-contained kubeconfig (certificates embedded) of
// User(name, groups...).
func (cp *ControlPlane) Kubeconfig(name string, groups ...string) ([]byte, error) {
	return KubeconfigFor(cp.User(name, groups...))
}

// KubeconfigFor is a kubeconfig reaching cfg's API server with its
// credentials.
func KubeconfigFor(cfg *rest.Config) ([]byte, error) {
	if cfg.Host == "" {
		return nil, errors.New("kubeconfig: no host")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	kc.CurrentContext = "default"
	return clientcmd.Write(*kc)
}
