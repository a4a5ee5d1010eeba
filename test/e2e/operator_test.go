package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	namespace = "eni-system"
	release   = "eni-operator"
	leaseName = "eni-operator.eni-operator.io"
	// operatorPods selects the Deployment's pods.
	operatorPods = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=operator"
)

// shared is the working tree's installation the tests share: installed
// once, uninstalled by a test that needs the node to itself (and then
// installed again by the next test that asks). An error sticks.
var shared struct {
	installed bool
	err       error
}

// installChart imports make image's image into containerd and installs
// the working tree's chart with helm, once for all tests: the operator
// talks to the emulator on the node's address, as it would to EC2.
func installChart(t *testing.T) {
	t.Helper()
	if !shared.installed && shared.err == nil {
		shared.err = installShared()
		shared.installed = shared.err == nil
	}
	if shared.err != nil {
		t.Fatal("installing the chart: ", shared.err)
	}
}

func installShared() error {
	if err := importImages(); err != nil {
		return err
	}
	start := time.Now()
	args := append([]string{"install", release, "../../charts/eni-operator",
		"--namespace", namespace, "--create-namespace",
		"--set", "image.repository=" + os.Getenv("ENI_E2E_IMAGE_REPO"),
		"--set", "image.tag=" + os.Getenv("ENI_E2E_VERSION"),
		"--set", "agent.image.repository=" + os.Getenv("ENI_E2E_AGENT_IMAGE_REPO"),
		"--wait", "--timeout", "3m"}, nodeValues("eni-agent")...)
	out, err := helmOutput(args...)
	if err != nil {
		return fmt.Errorf("%v\n%s\n%s", err, out, diagnose())
	}
	fmt.Printf("e2e: helm install --wait took %s\n", time.Since(start).Round(time.Second))
	return nil
}

// importImages imports make image's images into the node's containerd.
func importImages() error {
	for _, img := range []string{os.Getenv("ENI_E2E_IMAGE"), os.Getenv("ENI_E2E_AGENT_IMAGE")} {
		if err := node.ImportImage(img); err != nil {
			return err
		}
	}
	return nil
}

// nodeValues are the chart values for this node: the operator talks to
// the emulator, and the agent (opt-in: its DaemonSet runs on nodes
// labelled eni-operator.io/agent=true) keeps its state file in stateDir
// under the node's directory, which teardown removes.
func nodeValues(stateDir string) []string {
	return []string{
		"--set", "clusterName=e2e",
		"--set", "operator.flags.vpc-id=" + vpcID,
		"--set", "operator.env[0].name=AWS_ENDPOINT_URL_EC2", "--set", "operator.env[0].value=" + node.EmulatorURL,
		"--set", "operator.env[1].name=AWS_REGION", "--set", "operator.env[1].value=us-east-1",
		"--set", "operator.env[2].name=AWS_ACCESS_KEY_ID", "--set", "operator.env[2].value=e2e",
		"--set", "operator.env[3].name=AWS_SECRET_ACCESS_KEY", "--set", "operator.env[3].value=e2e",
		"--set", "operator.env[4].name=AWS_EC2_METADATA_DISABLED", "--set-string", "operator.env[4].value=true",
		"--set", "agent.enabled=true",
		"--set", "agent.stateFile=" + node.Dir() + "/" + stateDir + "/state.json",
	}
}

// uninstallShared removes the shared installation, if any, and its
// NodeENIs first (their finalizer needs the running operator).
func uninstallShared(t *testing.T) {
	t.Helper()
	if !shared.installed {
		return
	}
	if _, err := node.Kubectl("get", "crd", "nodeenis.networking.k8s.aws"); err == nil {
		kubectl(t, "delete", "nodeenis.networking.k8s.aws", "--all", "--timeout=2m")
	}
	helm(t, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m")
	shared.installed = false
}

// diagnose is what the node says about the operator's pods.
func diagnose() string { return diagnoseIn(namespace, operatorPods) }

// diagnoseIn is what the node says about the pods of ns matching selector.
func diagnoseIn(ns, selector string) string {
	out, _ := node.Kubectl("get", "pods,events", "-A", "-o", "wide")
	logs, _ := node.Kubectl("logs", "-n", ns, "-l", selector, "--tail", "30", "--all-containers", "--prefix")
	return out + "\n" + logs
}

// readyOperators are the names of the operator's Ready pods that are
// not being deleted.
func readyOperators(t *testing.T) []string {
	return readyPods(t, namespace, operatorPods)
}

// readyPods are the names of the Ready pods of ns matching selector (""
// for all) that are not being deleted.
func readyPods(t *testing.T, ns, selector string) []string {
	args := []string{"get", "pods", "-n", ns, "-o", "json"}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, args...)), &pods); err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, p.Name)
			}
		}
	}
	return ready
}

// leader is the pod holding the Lease (controller-runtime's identity is
// <hostname>_<uuid>, the hostname being the pod's name).
func leader(t *testing.T) string {
	holder := kubectl(t, "get", "lease", "-n", namespace, leaseName, "-o", "jsonpath={.spec.holderIdentity}")
	name, _, _ := strings.Cut(holder, "_")
	return name
}

func TestOperator(t *testing.T) {
	requireNode(t)
	installChart(t)

	var standby string
	t.Run("two replicas Ready through their probes, one leads", func(t *testing.T) {
		eventually(t, 2*time.Minute, "two Ready operator pods", func() error {
			if r := readyOperators(t); len(r) != 2 {
				return fmt.Errorf("ready: %v", r)
			}
			return nil
		})
		ready := readyOperators(t)
		var lead string
		eventually(t, time.Minute, "a leader among the Ready pods", func() error {
			lead = leader(t)
			if lead != ready[0] && lead != ready[1] {
				return fmt.Errorf("lease held by %q, ready pods %v", lead, ready)
			}
			return nil
		})
		standby = ready[0]
		if standby == lead {
			standby = ready[1]
		}
		t.Logf("leader %s, standby %s", lead, standby)
	})

	t.Run("the standby takes over when the leader's pod is deleted, and the PodDisruptionBudget keeps it", func(t *testing.T) {
		if standby == "" {
			t.Skip("no standby")
		}
		// Cordoned, the node takes no replacement pod: the standby, and
		// not a new replica racing it, must take the Lease.
		kubectl(t, "cordon", nodeName)
		defer kubectl(t, "uncordon", nodeName)
		old := leader(t)
		start := time.Now()
		kubectl(t, "delete", "pod", "-n", namespace, old, "--wait=false")
		eventually(t, time.Minute, "the standby leading", func() error {
			if l := leader(t); l != standby {
				return fmt.Errorf("lease held by %q", l)
			}
			return nil
		})
		t.Logf("%s took over %s after the delete", standby, time.Since(start).Round(100*time.Millisecond))

		// A drain now would evict the last operator: minAvailable 1 refuses.
		out, err := node.Kubectl("drain", nodeName, "--pod-selector", operatorPods, "--ignore-daemonsets", "--timeout=15s")
		if err == nil || !strings.Contains(err.Error(), "disruption budget") {
			t.Fatalf("drain with one operator left: want a refusal by the disruption budget, got %v\n%s", err, out)
		}
		if r := readyOperators(t); len(r) != 1 || r[0] != standby {
			t.Fatalf("after the refused drain, ready operators %v, want [%s]", r, standby)
		}
		kubectl(t, "uncordon", nodeName)
		eventually(t, 2*time.Minute, "two Ready operator pods again", func() error {
			if r := readyOperators(t); len(r) != 2 {
				return fmt.Errorf("ready: %v", r)
			}
			return nil
		})
	})

	t.Run("a pod's annotation tags its ENI, and deleting the pod untags it", func(t *testing.T) {
		ctx := context.Background()
		const pod = "tagged"
		apply(t, taggedPod(pod, "Team=e2e,CostCenter=42"))
		kubectl(t, "wait", "--for=condition=Ready", "--timeout=2m", "pod/"+pod, "-n", "default")
		ip := kubectl(t, "get", "pod", pod, "-n", "default", "-o", "jsonpath={.status.podIP}")
		t.Logf("pod %s has %s from the CNI", pod, ip)
		eventually(t, time.Minute, "the ENI of "+ip+" tagged", func() error {
			tags, err := eniTags(ctx, ip)
			if err == nil && (tags["Team"] != "e2e" || tags["CostCenter"] != "42") {
				err = fmt.Errorf("tags %v", tags)
			}
			return err
		})
		kubectl(t, "delete", "pod", pod, "-n", "default", "--timeout=1m")
		eventually(t, time.Minute, "the ENI of "+ip+" untagged", func() error {
			tags, err := eniTags(ctx, ip)
			if _, ok := tags["Team"]; err == nil && ok {
				err = fmt.Errorf("tags %v", tags)
			}
			if _, ok := tags["CostCenter"]; err == nil && ok {
				err = fmt.Errorf("tags %v", tags)
			}
			return err
		})
	})
}
