// Package e2e runs the chart, the images and the agent as users run them,
// on a real one-node cluster (test/e2e/cluster) on this machine: make e2e.
// The tests are skipped unless ENI_E2E is set (make test does not run
// them); make e2e sets it and says where the parts are.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/test/e2e/cluster"
)

// The node's world: one instance in a VPC whose pod subnet holds a branch
// ENI for every address the CNI hands out (security groups for pods: one
// ENI a pod, found by its IP), so a tagged pod's ENI is there to tag.
const (
	nodeName   = "eni-e2e-node"
	nodeIP     = "10.88.1.10"
	instanceID = "i-0e2e0000000000001"
	vpcID      = "vpc-0e2e0000000000001"
	zone       = "us-east-1a"
	podSubnet  = "10.88.0.0/24"
	firstPodIP = 10 // 10.88.0.10 ...
	podIPs     = 40 // ... 10.88.0.49
	// pauseRef is the pause image, also the test workloads' image.
	pauseRef = "eni-e2e.local/pause:e2e"
)

// node is the running cluster; nil when the tests are skipped.
var node *cluster.Cluster

// interrupted is done on SIGINT or SIGTERM. A test that waits for it
// (TestDemo) sets waitsForInterrupt, so the node is torn down after the
// tests end instead of at once.
var (
	interrupted       context.Context
	waitsForInterrupt atomic.Bool
)

func TestMain(m *testing.M) {
	if os.Getenv("ENI_E2E") == "" {
		fmt.Println("e2e: skipped; run them with `make e2e` (ENI_E2E=1, root, a real node on this machine)")
		os.Exit(m.Run())
	}
	// internal/ec2 (eniTags) logs through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(runWithNode(m))
}

// runWithNode starts the node, runs the tests and tears the node down,
// also on SIGINT or SIGTERM (the daemons are in their own process groups,
// so a Ctrl-C reaches only this process).
func runWithNode(m *testing.M) int {
	cfg, err := config()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	interrupted = ctx
	start := time.Now()
	node, err = cluster.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the node:", err)
		return 1
	}
	fmt.Printf("e2e: node up in %s (logs in %s)\n", time.Since(start).Round(time.Second), cfg.LogDir)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			if waitsForInterrupt.Load() {
				return
			}
			fmt.Fprintln(os.Stderr, "e2e: interrupted: tearing the node down")
			if err := node.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
			}
			os.Exit(130)
		case <-stopped:
		}
	}()
	code := m.Run()
	close(stopped)
	start = time.Now()
	if err := node.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
		return 1
	}
	fmt.Printf("e2e: node torn down in %s\n", time.Since(start).Round(time.Second))
	return code
}

func config() (cluster.Config, error) {
	env := func(k string) string { return os.Getenv(k) }
	for _, k := range []string{"ENI_E2E_CONTROL_PLANE", "ENI_E2E_NODE_BIN", "ENI_E2E_PAUSE_IMAGE", "ENI_E2E_EMULATOR"} {
		if env(k) == "" {
			return cluster.Config{}, fmt.Errorf("%s is not set (make e2e sets it)", k)
		}
	}
	dir := "/var/lib/eni-e2e"
	logDir := logDir()
	_ = os.RemoveAll(logDir)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return cluster.Config{}, err
	}
	world := filepath.Join(logDir, "world.json")
	if err := writeWorld(world); err != nil {
		return cluster.Config{}, err
	}
	return cluster.Config{
		Dir: dir, LogDir: logDir,
		ControlPlaneBin: env("ENI_E2E_CONTROL_PLANE"), NodeBin: env("ENI_E2E_NODE_BIN"),
		PauseImage: env("ENI_E2E_PAUSE_IMAGE"), PauseRef: pauseRef,
		NodeName: nodeName, NodeIP: nodeIP, ProviderID: "aws:///" + zone + "/" + instanceID,
		PodSubnet: podSubnet, PodRangeStart: podIP(0), PodRangeEnd: podIP(podIPs - 1),
		ServiceCIDR: "10.96.0.0/24", APIServiceIP: "10.96.0.1",
		Emulator: env("ENI_E2E_EMULATOR"), EmulatorWorld: world, EmulatorPort: 4566,
		Logf: func(f string, a ...any) { fmt.Printf("e2e: "+f+"\n", a...) },
	}, nil
}

func podIP(i int) string { return fmt.Sprintf("10.88.0.%d", firstPodIP+i) }

// writeWorld writes the emulator's world (see the constants).
func writeWorld(path string) error {
	w := emulator.World{
		VPCs: []emulator.VPCSpec{{ID: vpcID, Name: "e2e", CIDR: "10.88.0.0/16"}},
		Subnets: []emulator.SubnetSpec{
			{ID: "subnet-0e2e0000000000001", Name: "e2e-nodes", VPC: vpcID, CIDR: "10.88.1.0/24", AvailabilityZone: zone},
			{ID: "subnet-0e2e0000000000002", Name: "e2e-pods", VPC: vpcID, CIDR: podSubnet, AvailabilityZone: zone},
		},
		SecurityGroups: []emulator.SecurityGroupSpec{{ID: "sg-0e2e0000000000001", Name: "nodes", VPC: vpcID}},
		Instances: []emulator.InstanceSpec{{ID: instanceID, Name: nodeName, Type: "m5.xlarge",
			Subnet: "subnet-0e2e0000000000001", SecurityGroups: []string{"sg-0e2e0000000000001"}, PrivateIP: nodeIP}},
	}
	for i := 0; i < podIPs; i++ {
		w.NetworkInterfaces = append(w.NetworkInterfaces, emulator.NetworkInterfaceSpec{
			Subnet: "subnet-0e2e0000000000002", InterfaceType: "branch", Description: "aws-k8s-branch-eni",
			SecurityGroups: []string{"sg-0e2e0000000000001"}, PrivateIP: podIP(i),
		})
	}
	data, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// requireNode skips a test when no node runs (ENI_E2E unset).
func requireNode(t *testing.T) *cluster.Cluster {
	t.Helper()
	if node == nil {
		t.Skip("no e2e node (ENI_E2E unset)")
	}
	return node
}

func TestNodeRegistered(t *testing.T) {
	n := requireNode(t)
	out, err := n.Kubectl("get", "node", nodeName, "-o", "jsonpath={.spec.providerID} {.status.addresses[0].address}")
	if err != nil {
		t.Fatal(err)
	}
	if want := "aws:///" + zone + "/" + instanceID + " " + nodeIP; out != want {
		t.Fatalf("node %s: got %q, want %q", nodeName, out, want)
	}
}
