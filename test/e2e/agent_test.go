package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/test/e2e/cluster"
)

const agentPods = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=agent"

// eniLink stands for the ENI the emulator attaches to the node's
// instance: on EC2 the hypervisor adds a NIC with the ENI's MAC; here the
// test adds a veth carrying that MAC (this kernel has no dummy driver).
const eniLink = cluster.LinkPrefix + "eni1"

// TestAgent: a NodeENI for the node makes the operator create and attach
// an ENI and list it in the node's ENINode; the agent's DaemonSet pod
// (hostNetwork, NET_ADMIN only, Ready through its exec probes) reports the
// ENI Pending until a link with its MAC appears on the host, then finds
// that link from its pod and reports what it did with it.
func TestAgent(t *testing.T) {
	requireNode(t)
	installChart(t)

	kubectl(t, "label", "node", nodeName, "--overwrite", "eni-operator.io/agent=true", "ng=e2e")
	eventually(t, 2*time.Minute, "the agent pod Ready", func() error {
		_, err := readyAgent(t)
		return err
	})
	pod, _ := readyAgent(t)
	checkAgentPodSpec(t, pod)

	apply(t, nodeENI)
	att := attachedENI(t)
	t.Logf("operator attached %s (MAC %s) to %s", att.ENIID, att.MACAddress, att.InstanceID)

	// No interface with the ENI's MAC on the host yet: Pending.
	eventually(t, time.Minute, "the agent reporting "+att.ENIID+" Pending", func() error {
		return interfaceState(t, att.ENIID, func(s v1alpha1.InterfaceStatus) bool { return s.State == v1alpha1.InterfacePending })
	})

	for _, args := range [][]string{
		{"link", "add", eniLink, "type", "veth", "peer", "name", eniLink + "p"},
		{"link", "set", eniLink, "address", att.MACAddress},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", eniLink).Run() })

	// The agent finds the link by the ENI's MAC from its pod and, the link
	// being a veth and not a NIC (rtnetlink kind "device", as an ENA or
	// Intel VF netdev has), refuses to touch it and says so. This kernel
	// cannot make a stand-in of kind "device" (no dummy or netdevsim
	// driver), so the Configured path (MTU, up) is not reachable here;
	// internal/agent's tests cover it with veth and dummy links through
	// a test-only hook.
	eventually(t, 2*time.Minute, "the agent refusing the veth standing for "+att.ENIID, func() error {
		return interfaceState(t, att.ENIID, func(s v1alpha1.InterfaceStatus) bool {
			return s.State == v1alpha1.InterfaceFailed && s.InterfaceName == eniLink &&
				strings.Contains(s.Message, "is a veth link, not an ENI's network device")
		})
	})
	out, err := exec.Command("ip", "-o", "link", "show", eniLink).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mtu 1500") || strings.Contains(string(out), ",UP") {
		t.Fatalf("the agent touched the refused %s (want it down with MTU 1500): %v %s", eniLink, err, out)
	}
	if _, err := readyAgent(t); err != nil {
		t.Fatalf("after reporting: %v", err)
	}
}

// interfaceState checks the ENINode's status entry of eni with ok.
func interfaceState(t *testing.T, eni string, ok func(v1alpha1.InterfaceStatus) bool) error {
	en, err := eniNode(t)
	if err != nil {
		return err
	}
	for _, s := range en.Status.Interfaces {
		if s.ENIID == eni {
			if !ok(s) {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		}
	}
	return fmt.Errorf("no status for %s: %+v", eni, en.Status.Interfaces)
}

// readyAgent is the agent's pod on the node, or why it is not Ready (a
// restart counts: the exec probes must pass from the start).
func readyAgent(t *testing.T) (corev1.Pod, error) {
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(kubectl(t, "get", "pods", "-n", namespace, "-l", agentPods, "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		return corev1.Pod{}, fmt.Errorf("%d agent pods", len(pods.Items))
	}
	p := pods.Items[0]
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			t.Fatalf("agent container restarted %d times: %+v", cs.RestartCount, cs.LastTerminationState)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return p, nil
		}
	}
	return p, fmt.Errorf("pod %s: %s %+v", p.Name, p.Status.Phase, p.Status.Conditions)
}

// checkAgentPodSpec: hostNetwork, not privileged, NET_ADMIN the only
// capability, exec probes (the pod's httpGet would go to the node's IP).
func checkAgentPodSpec(t *testing.T, p corev1.Pod) {
	t.Helper()
	c := p.Spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case !p.Spec.HostNetwork:
		t.Error("agent pod not on the host network")
	case sc == nil || (sc.Privileged != nil && *sc.Privileged):
		t.Errorf("agent privileged: %+v", sc)
	case sc.Capabilities == nil || len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "NET_ADMIN":
		t.Errorf("agent capabilities %+v, want NET_ADMIN only", sc.Capabilities)
	case c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil || c.LivenessProbe == nil || c.LivenessProbe.Exec == nil:
		t.Errorf("agent probes are not exec probes: %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
}

// attachedENI waits until the node's ENINode lists the e2e-secondary
// NodeENI's ENI attached, with its attachment ID and MAC address, and
// returns that entry.
func attachedENI(t *testing.T) v1alpha1.ENIAttachment {
	t.Helper()
	var att v1alpha1.ENIAttachment
	eventually(t, 2*time.Minute, "the ENINode listing the NodeENI's ENI attached", func() error {
		en, err := eniNode(t)
		if err != nil {
			return err
		}
		for _, a := range en.Spec.Attachments {
			if a.NodeENI == "e2e-secondary" && a.AttachmentID != "" && a.MACAddress != "" {
				att = a
				return nil
			}
		}
		return fmt.Errorf("attachments %+v", en.Spec.Attachments)
	})
	return att
}

func eniNode(t *testing.T) (v1alpha1.ENINode, error) {
	var en v1alpha1.ENINode
	out, err := node.Kubectl("get", "eninodes.networking.k8s.aws", nodeName, "-o", "json")
	if err != nil {
		return en, err
	}
	return en, json.Unmarshal([]byte(out), &en)
}
