// Package cluster starts a one-node Kubernetes cluster on this machine
// from real parts, for the end-to-end tests (make e2e): etcd,
// kube-apiserver and kubectl from hack/control-plane-binaries.sh;
// kube-controller-manager, kube-scheduler, kubelet, kube-proxy and the CNI
// bridge and host-local plugins from hack/e2e/node-binaries.sh; containerd
// and runc from Debian's packages; a pause image from
// hack/e2e/pause-image. It needs root and cgroups (Check says what is
// missing), changes the host only in ways Stop undoes, and cleans up what
// an earlier run that was killed left behind before it starts.
package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Config says where the parts are and what the node looks like.
type Config struct {
	// Dir holds all of the node's state (PKI, etcd, containerd, kubelet,
	// CNI); a fixed path, so that a run that was killed is found and
	// cleaned up by the next one. Removed by Stop.
	Dir string
	// LogDir keeps each daemon's log after Stop.
	LogDir string
	// ControlPlaneBin holds etcd, kube-apiserver and kubectl.
	ControlPlaneBin string
	// NodeBin holds bin/ (kubelet, kube-proxy, kube-controller-manager,
	// kube-scheduler) and cni/ (the CNI plugins).
	NodeBin string
	// PauseImage is the tarball of PauseRef (containerd's sandbox image).
	PauseImage, PauseRef string
	// NodeName is the Node's name and NodeIP its address: a dummy link
	// of the host carries it, the API server and the emulator listen on
	// it, and pods reach it through their bridge's gateway.
	NodeName, NodeIP string
	// ProviderID is the kubelet's spec.providerID (aws:///zone/instance).
	ProviderID string
	// PodSubnet is the bridge's subnet (its first address the gateway);
	// pods get the addresses PodRangeStart to PodRangeEnd.
	PodSubnet, PodRangeStart, PodRangeEnd string
	// ServiceCIDR is the Services' range (its first address: kubernetes).
	ServiceCIDR, APIServiceIP string
	// Emulator, when set, runs the EC2 emulator on NodeIP:EmulatorPort
	// with the world in EmulatorWorld.
	Emulator, EmulatorWorld string
	EmulatorPort            int
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// LinkPrefix starts the name of every link of the node: Stop removes
// them all, the ones tests add too (a stand-in for an attached ENI).
const LinkPrefix = "enie2e"

// Names of the host objects the cluster makes; Stop removes them.
const (
	nodeLink   = LinkPrefix + "0"   // veth holding NodeIP (its peer goes with it)
	bridgeLink = LinkPrefix + "br0" // the CNI bridge
	cgroupRoot = "eni-e2e"          // kubelet's cgroupRoot in every hierarchy
	netnsDir   = "/run/netns"       // where containerd 1.6 puts pods' netns
)

// Check says why this machine cannot run the node, or nil.
func Check(cfg Config) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (the kubelet, containerd and the CNI plugins change cgroups, mounts, links and iptables)")
	}
	for _, c := range []string{"memory", "cpu", "cpuset", "pids", "devices", "freezer"} {
		// Only cgroup v1 (the machines this runs on): a cgroup v2 host
		// needs the kubelet's cgroup v2 settings, which are not written.
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			missing = append(missing, "the cgroup v1 controller "+c+" mounted at /sys/fs/cgroup/"+c+" (this node is set up for cgroup v1 with the cgroupfs driver; cgroup v2 is not supported yet)")
		}
	}
	for _, b := range []string{"containerd", "runc", "ctr", "iptables", "iptables-restore", "ip"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b+" on PATH (apt-get install containerd runc iptables iproute2; hack/e2e/node-deps.sh)")
		}
	}
	for _, f := range []string{
		filepath.Join(cfg.ControlPlaneBin, "kube-apiserver"), filepath.Join(cfg.ControlPlaneBin, "etcd"),
		filepath.Join(cfg.NodeBin, "bin", "kubelet"), filepath.Join(cfg.NodeBin, "cni", "bridge"), cfg.PauseImage,
	} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the e2e node needs:\n  - %s", strings.Join(missing, "\n  - "))
	}
	return nil
}
