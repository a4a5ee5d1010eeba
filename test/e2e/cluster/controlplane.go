package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sysctls the kubelet and kube-proxy set on a node (kernel tunables,
// route_localnet); hostSettings saves them and teardown puts them back.
var sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/conf/all/route_localnet", "net/ipv4/ip_forward",
}

const savedSysctls = "saved-sysctls.json"

func (c *Cluster) hostSettings(context.Context) error {
	saved := map[string]string{}
	for _, s := range sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			saved[s] = strings.TrimSpace(string(b))
		}
	}
	data, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path(savedSysctls), data, 0o600); err != nil {
		return err
	}
	// The pods' network namespaces that exist already are not the node's.
	var before []string
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		before = append(before, e.Name())
	}
	return os.WriteFile(c.path("netns.before"), []byte(strings.Join(before, "\n")), 0o600)
}

// nodeAddress puts NodeIP on a link of its own: the node's InternalIP,
// which the host answers on and pods reach through the bridge's gateway.
// A veth pair, not a dummy link: this machine's kernel has no dummy
// driver ("Unknown device type").
func (c *Cluster) nodeAddress(context.Context) error {
	if err := run("ip", "link", "add", nodeLink, "type", "veth", "peer", "name", nodeLink+"p"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", c.cfg.NodeIP+"/32", "dev", nodeLink); err != nil {
		return err
	}
	return run("ip", "link", "set", nodeLink, "up")
}

func (c *Cluster) certificates(context.Context) error {
	var err error
	if c.pki, err = newPKI(c.path("pki")); err != nil {
		return err
	}
	hosts := []string{c.cfg.NodeIP, c.cfg.APIServiceIP, "127.0.0.1", "localhost", "kubernetes",
		"kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if err := c.pki.issue("apiserver", "kube-apiserver", nil, hosts...); err != nil {
		return err
	}
	// One admin identity for the control plane's clients and the tests;
	// the kubelet has its own, so the Node authorizer and NodeRestriction
	// treat it as they treat a real node's.
	if err := c.pki.issue("admin", "kubernetes-admin", []string{"system:masters"}); err != nil {
		return err
	}
	return c.pki.issue("kubelet", "system:node:"+c.cfg.NodeName, []string{"system:nodes"})
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	url := "http://" + hostPort("127.0.0.1", client)
	p, err := c.start("etcd", filepath.Join(c.cfg.ControlPlaneBin, "etcd"),
		"--data-dir", c.path("etcd"), "--name", "e2e",
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", "http://"+hostPort("127.0.0.1", peer),
		"--initial-advertise-peer-urls", "http://"+hostPort("127.0.0.1", peer),
		"--initial-cluster", "e2e=http://"+hostPort("127.0.0.1", peer),
		"--unsafe-no-fsync")
	if err != nil {
		return err
	}
	c.etcdURL = url
	hc := &http.Client{Timeout: 2 * time.Second}
	return waitFor(ctx, p, time.Minute, "etcd healthy", func() error { return httpOK(hc, url+"/health") })
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.Server = "https://" + hostPort(c.cfg.NodeIP, port)
	pk := c.pki.path
	p, err := c.start("kube-apiserver", filepath.Join(c.cfg.ControlPlaneBin, "kube-apiserver"),
		"--etcd-servers", c.etcdURL,
		"--bind-address", c.cfg.NodeIP, "--advertise-address", c.cfg.NodeIP,
		"--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pk("apiserver.crt"), "--tls-private-key-file", pk("apiserver.key"),
		"--client-ca-file", pk("ca.crt"),
		"--kubelet-client-certificate", pk("admin.crt"), "--kubelet-client-key", pk("admin.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", pk("sa.pub"), "--service-account-signing-key-file", pk("sa.key"),
		"--service-cluster-ip-range", c.cfg.ServiceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--profiling=false")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, p, 2*time.Minute, "kube-apiserver ready", func() error { return c.httpsGet(c.Server + "/readyz") }); err != nil {
		return err
	}
	c.Kubeconfig = c.path("admin.kubeconfig")
	return c.pki.kubeconfig(c.Kubeconfig, c.Server, "admin")
}

func (c *Cluster) startControllers(ctx context.Context) error {
	bin := func(n string) string { return filepath.Join(c.cfg.NodeBin, "bin", n) }
	cm, err := c.start("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--use-service-account-credentials",
		"--service-account-private-key-file", c.pki.path("sa.key"), "--root-ca-file", c.pki.path("ca.crt"),
		"--service-cluster-ip-range", c.cfg.ServiceCIDR,
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--controllers", "*")
	if err != nil {
		return err
	}
	sched, err := c.start("kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0")
	if err != nil {
		return err
	}
	// Both are ready when they have stayed up a few seconds: with the
	// serving ports off they have no health endpoint; the tests see their
	// work (ReplicaSets, scheduled pods) anyway.
	time.Sleep(3 * time.Second)
	for _, p := range []*proc{cm, sched} {
		if p.exited() {
			return fmt.Errorf("%s exited:\n%s", p.name, p.tail(30))
		}
	}
	return nil
}

func (c *Cluster) startEmulator(ctx context.Context) error {
	if c.cfg.Emulator == "" {
		return nil
	}
	listen := hostPort(c.cfg.NodeIP, c.cfg.EmulatorPort)
	p, err := c.start("ec2-emulator", c.cfg.Emulator, "--listen", listen, "--seed-file", c.cfg.EmulatorWorld)
	if err != nil {
		return err
	}
	c.EmulatorURL = "http://" + listen
	hc := &http.Client{Timeout: 2 * time.Second}
	return waitFor(ctx, p, 30*time.Second, "emulator healthy", func() error { return httpOK(hc, c.EmulatorURL+"/_emulator/healthz") })
}
