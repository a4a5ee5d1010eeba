package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// startContainerd starts containerd with its state below Dir.
// restrict_oom_score_adj: the pod sandbox asks for oom_score_adj -998,
// which this machine refuses to lower ("write error: Permission denied"
// even as root), and runc then fails with "can't get final child's PID
// from pipe: EOF"; restricted, containerd keeps its own score instead.
func (c *Cluster) startContainerd(ctx context.Context) error {
	c.Socket = c.path("containerd", "containerd.sock")
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
`, c.path("containerd", "root"), c.path("containerd", "state"), c.Socket, c.cfg.PauseRef,
		filepath.Join(c.cfg.NodeBin, "cni"), c.path("cni", "net.d"))
	if err := c.writeFile(conf, "containerd", "config.toml"); err != nil {
		return err
	}
	if err := c.writeFile(c.cniConfig(), "cni", "net.d", "10-e2e.conflist"); err != nil {
		return err
	}
	p, err := c.start("containerd", "containerd", "--config", c.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	if err := p.WaitUntil(ctx, 30*time.Second, "containerd's socket", func() error {
		conn, err := net.Dial("unix", c.Socket)
		if err == nil {
			err = conn.Close()
		}
		return err
	}); err != nil {
		return err
	}
	return c.ImportImage(c.cfg.PauseImage)
}

// ImportImage loads an image tarball (make image's, the pause image's)
// into containerd's k8s.io namespace, where the kubelet finds it: no
// registry is reachable here.
func (c *Cluster) ImportImage(tarball string) error {
	return run("ctr", "--address", c.Socket, "-n", "k8s.io", "images", "import", "--no-unpack=false", tarball)
}

// cniConfig is a bridge network with host-local addresses: every pod gets
// one address of PodRangeStart..PodRangeEnd, the range the emulator's
// ENIs hold. No masquerade: nothing leaves the machine.
func (c *Cluster) cniConfig() string {
	_, subnet, _ := net.ParseCIDR(c.cfg.PodSubnet)
	gw := make(net.IP, len(subnet.IP.To4()))
	copy(gw, subnet.IP.To4())
	gw[3]++
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "eni-e2e",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q,
              "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q, "gateway": %q}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
`, bridgeLink, c.path("cni", "ipam"), c.cfg.PodSubnet, c.cfg.PodRangeStart, c.cfg.PodRangeEnd, gw.String())
}

func (c *Cluster) writeFile(content string, path ...string) error {
	p := c.path(path...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

func (c *Cluster) startKubelet(ctx context.Context) error {
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	// failCgroupV1: false — this machine has cgroup v1, which kubelet 1.35
	// and later refuse unless told (cgroup v1 is in maintenance mode).
	// cgroupDriver: cgroupfs — Debian's containerd 1.6 lacks the
	// RuntimeConfig CRI call, so kubelet 1.37 takes the driver from here.
	// Eviction thresholds low and image GC off: the node must not evict
	// the test's pods or drop the imported images (no registry to pull
	// them again).
	conf := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
providerID: %s
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
failSwapOn: false
resolvConf: /etc/resolv.conf
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
rotateCertificates: false
staticPodPath: ""
`, cgroupRoot, c.Socket, c.cfg.ProviderID, c.cfg.NodeIP, port, c.cp.PKI.Path("ca.crt"))
	if err := c.writeFile(conf, "kubelet", "config.yaml"); err != nil {
		return err
	}
	kc := c.path("kubelet.kubeconfig")
	if err := c.writeKubeconfig(kc, "system:node:"+c.cfg.NodeName, "system:nodes"); err != nil {
		return err
	}
	p, err := c.start("kubelet", filepath.Join(c.cfg.NodeBin, "bin", "kubelet"),
		"--config", c.path("kubelet", "config.yaml"), "--kubeconfig", kc,
		"--root-dir", c.path("kubelet", "root"), "--cert-dir", c.path("kubelet", "pki"),
		"--hostname-override", c.cfg.NodeName, "--node-ip", c.cfg.NodeIP, "--v", "2")
	if err != nil {
		return err
	}
	return p.WaitUntil(ctx, 2*time.Minute, "node "+c.cfg.NodeName+" Ready", func() error {
		return c.kubectlCheck("wait", "--for=condition=Ready", "--timeout=1s", "node/"+c.cfg.NodeName)
	})
}

func (c *Cluster) startKubeProxy(ctx context.Context) error {
	metrics, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.start("kube-proxy", filepath.Join(c.cfg.NodeBin, "bin", "kube-proxy"),
		"--kubeconfig", c.Kubeconfig, "--hostname-override", c.cfg.NodeName,
		"--proxy-mode", "iptables", "--cluster-cidr", c.cfg.PodSubnet,
		// Leave the host's conntrack sysctls as they are.
		"--conntrack-max-per-core", "0", "--conntrack-tcp-timeout-established", "0", "--conntrack-tcp-timeout-close-wait", "0",
		"--metrics-bind-address", hostPort("127.0.0.1", metrics), "--healthz-bind-address", hostPort("127.0.0.1", healthz))
	if err != nil {
		return err
	}
	// Ready when the kubernetes Service's rules are in: pods reach the API
	// server through its ClusterIP.
	return p.WaitUntil(ctx, time.Minute, "kube-proxy's rules for the kubernetes Service", func() error {
		rules, err := output("iptables", "-t", "nat", "-S", "KUBE-SERVICES")
		if err == nil && !strings.Contains(rules, c.cfg.APIServiceIP+"/32") {
			err = fmt.Errorf("no rule for %s yet", c.cfg.APIServiceIP)
		}
		return err
	})
}

// kubectlCheck runs kubectl as the admin.
func (c *Cluster) kubectlCheck(args ...string) error {
	return run(filepath.Join(c.cfg.ControlPlaneBin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

// Kubectl runs kubectl as the admin and returns its output.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return output(filepath.Join(c.cfg.ControlPlaneBin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

// makeCgroupRoot makes /eni-e2e in every v1 hierarchy for the kubelet's
// cgroupRoot (it must exist); cpuset children start empty, so it gets its
// parent's CPUs and memory nodes.
func makeCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, cgroupRoot)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cgroupHierarchies are the mounted hierarchies (v1, and the hybrid
// layout's unified one, where the kubelet makes its root too).
func cgroupHierarchies() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		h := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil {
			out = append(out, h)
		}
	}
	return out
}
