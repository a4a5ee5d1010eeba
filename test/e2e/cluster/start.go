package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/eni-operator/eni-operator/internal/kit/controlplane"
)

// Cluster is a running one-node cluster.
type Cluster struct {
	cfg Config
	// Kubeconfig is an admin's (system:masters) kubeconfig.
	Kubeconfig string
	// Server is the API server's URL; EmulatorURL the emulator's.
	Server, EmulatorURL string
	// Socket is containerd's.
	Socket string
	// cp is etcd and kube-apiserver, started first and stopped last.
	cp *controlplane.ControlPlane
	// launcher starts the node's daemons, procs, in start order after cp.
	launcher *controlplane.Launcher
	procs    []*controlplane.Process
}

// Dir is the node's state directory: a hostPath below it goes with the node.
func (c *Cluster) Dir() string { return c.cfg.Dir }

func (c *Cluster) path(p ...string) string {
	return filepath.Join(append([]string{c.cfg.Dir}, p...)...)
}

func (c *Cluster) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

// Start brings the node up; on error everything it started is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	c = &Cluster{cfg: cfg, launcher: controlplane.NewLauncher()}
	c.logf("cleaning up what an earlier run left in %s", cfg.Dir)
	if err := teardown(cfg); err != nil {
		return nil, fmt.Errorf("cleaning up an earlier run: %w", err)
	}
	defer func() {
		if err != nil {
			if serr := c.Stop(); serr != nil {
				c.logf("stopping after the failure: %v", serr)
			}
			c = nil
		}
	}()
	for _, d := range []string{cfg.Dir, cfg.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, err
		}
	}
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"host settings", c.hostSettings},
		{"node address", c.nodeAddress},
		{"certificates", c.certificates},
		{"etcd", c.startEtcd},
		{"kube-apiserver", c.startAPIServer},
		{"kube-controller-manager and kube-scheduler", c.startControllers},
		{"EC2 emulator", c.startEmulator},
		{"containerd", c.startContainerd},
		{"kubelet", c.startKubelet},
		{"kube-proxy", c.startKubeProxy},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return c, fmt.Errorf("%s: %w", s.what, err)
		}
		c.logf("%s up (%s)", s.what, time.Since(start).Round(10*time.Millisecond))
	}
	return c, nil
}

// start starts a daemon and remembers it for Stop.
func (c *Cluster) start(name, bin string, args ...string) (*controlplane.Process, error) {
	p, err := c.launcher.Start(name, bin, filepath.Join(c.cfg.LogDir, name+".log"), args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// freePort is a TCP port free on the loopback right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
