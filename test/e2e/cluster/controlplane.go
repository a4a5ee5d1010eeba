package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/controlplane"
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

// certificates makes the control plane's directory, certificates and
// ports (below Dir, so a crashed run's teardown finds its processes by
// their command lines), with the node's kubelet identity and the API
// server's settings of a real cluster (Node authorizer, NodeRestriction
// and ServiceAccount admission).
func (c *Cluster) certificates(context.Context) error {
	cp, err := controlplane.New(controlplane.Options{
		Bins: c.cfg.ControlPlaneBin, Dir: c.cfg.Dir, LogDir: c.cfg.LogDir, BindAddress: c.cfg.NodeIP,
		Hosts: []string{c.cfg.APIServiceIP, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		ServiceAccountIssuer: "https://kubernetes.default.svc.cluster.local", ServiceCIDR: c.cfg.ServiceCIDR,
		APIServerArgs: []string{"--advertise-address=" + c.cfg.NodeIP, "--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction", "--disable-admission-plugins=", "--profiling=false"},
	})
	if err != nil {
		return err
	}
	c.cp = cp
	// The API server's identity towards the kubelet (logs, exec).
	if err := cp.PKI.Issue("admin", "kubernetes-admin", []string{"system:masters"}); err != nil {
		return err
	}
	cp.AddAPIServerArgs("--kubelet-client-certificate="+cp.PKI.Path("admin.crt"),
		"--kubelet-client-key="+cp.PKI.Path("admin.key"))
	c.Server = cp.Host
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error { return c.cp.StartEtcd(ctx) }

// startAPIServer starts kube-apiserver and writes the admin's kubeconfig
// (certificates embedded) for the control plane's clients and the tests.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	if err := c.cp.StartAPIServer(ctx); err != nil {
		return err
	}
	c.Kubeconfig = c.path("admin.kubeconfig")
	return c.writeKubeconfig(c.Kubeconfig, "kubernetes-admin", "system:masters")
}

// writeKubeconfig writes user's kubeconfig to path; the kubelet has its
// own, so the Node authorizer and NodeRestriction treat it as they treat
// a real node's.
func (c *Cluster) writeKubeconfig(path, user string, groups ...string) error {
	kc, err := c.cp.Kubeconfig(user, groups...)
	if err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

func (c *Cluster) startControllers(ctx context.Context) error {
	bin := func(n string) string { return filepath.Join(c.cfg.NodeBin, "bin", n) }
	cm, err := c.start("kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--use-service-account-credentials",
		"--service-account-private-key-file", c.cp.PKI.Path("sa.key"), "--root-ca-file", c.cp.PKI.Path("ca.crt"),
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
	for _, p := range []*controlplane.Process{cm, sched} {
		if p.Exited() {
			return fmt.Errorf("%s exited:\n%s", p.Name, controlplane.Tail(p.Log, 3000))
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
	return p.WaitUntil(ctx, 30*time.Second, "emulator healthy", func() error { return controlplane.HTTPOK(hc, c.EmulatorURL+"/_emulator/healthz") })
}
