package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const readinessTaint = "eni-operator.io/interfaces-not-ready"

// TestReadinessTaint on the real node, scheduler and kubelet: with the
// node registered with the readiness taint (set here by kubectl, as
// kubelet's --register-with-taints or Karpenter's startupTaints would)
// and a NodeENI selecting it whose interface the agent has not
// configured (no NIC with the ENI's MAC on this host), a pod that
// tolerates nothing stays Pending; once no NodeENI selects the node,
// the operator lifts the taint and the pod is scheduled and runs.
func TestReadinessTaint(t *testing.T) {
	requireNode(t)
	installChart(t)
	kubectl(t, "label", "node", nodeName, "--overwrite", "eni-operator.io/agent=true", "ng=e2e")
	apply(t, nodeENI)
	t.Cleanup(func() {
		_, _ = node.Kubectl("delete", "pod", "-n", "default", "untolerating", "--ignore-not-found", "--wait=false")
		_, _ = node.Kubectl("taint", "node", nodeName, readinessTaint+":NoSchedule-")
		_, _ = node.Kubectl("label", "node", nodeName, "--overwrite", "ng=e2e")
	})
	kubectl(t, "taint", "node", nodeName, "--overwrite", readinessTaint+"=:NoSchedule")
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: untolerating
  namespace: default
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
`, pauseRef))

	// The scheduler says "untolerated taint(s)" without naming them; the
	// node has no other taint.
	eventually(t, time.Minute, "the pod unschedulable for the readiness taint", func() error {
		msg := kubectl(t, "get", "pod", "-n", "default", "untolerating", "-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}`)
		taints := kubectl(t, "get", "node", nodeName, "-o", "jsonpath={.spec.taints[*].key}")
		if !strings.Contains(msg, "untolerated taint") || taints != readinessTaint {
			return fmt.Errorf("PodScheduled message %q, node taints %q", msg, taints)
		}
		return nil
	})
	// It stays so while the NodeENI's interface is not configured.
	time.Sleep(10 * time.Second)
	if taints := kubectl(t, "get", "node", nodeName, "-o", "jsonpath={.spec.taints[*].key}"); !strings.Contains(taints, readinessTaint) {
		t.Fatalf("the taint was lifted while the NodeENI's interface is not configured (taints %q)", taints)
	}
	if phase := kubectl(t, "get", "pod", "-n", "default", "untolerating", "-o", "jsonpath={.status.phase}"); phase != "Pending" {
		t.Fatalf("pod %s while the node is tainted", phase)
	}

	kubectl(t, "label", "node", nodeName, "ng-")
	eventually(t, 2*time.Minute, "the taint lifted and the pod running", func() error {
		taints := kubectl(t, "get", "node", nodeName, "-o", "jsonpath={.spec.taints[*].key}")
		phase := kubectl(t, "get", "pod", "-n", "default", "untolerating", "-o", "jsonpath={.status.phase}")
		if strings.Contains(taints, readinessTaint) || phase != "Running" {
			return fmt.Errorf("taints %q, pod %s", taints, phase)
		}
		return nil
	})
}
