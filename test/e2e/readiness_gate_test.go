package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestMultusReadinessGate on the real kubelet and the installed chart:
// a pod naming the readiness gate eni-operator.io/addresses-registered
// runs but is not Ready while Multus has not reported its address; once
// its network status (written here as Multus would) names the NodeENI's
// ENI, the operator assigns the address in EC2 and writes the condition,
// through the chart's admission policy, and the kubelet makes the pod
// Ready.
func TestMultusReadinessGate(t *testing.T) {
	requireNode(t)
	installChart(t)
	kubectl(t, "label", "node", nodeName, "--overwrite", "ng=e2e")
	apply(t, nodeENI+"  multus: {registerPodAddresses: true}\n")
	t.Cleanup(func() {
		_, _ = node.Kubectl("delete", "pod", "-n", "default", "gated", "--ignore-not-found", "--wait=false")
		apply(t, nodeENI)
	})
	att := attachedENI(t)
	apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: gated
  namespace: default
spec:
  terminationGracePeriodSeconds: 0
  readinessGates:
  - conditionType: eni-operator.io/addresses-registered
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
`, pauseRef))
	gate := func() (phase, ready, cond, reason string) {
		phase = kubectl(t, "get", "pod", "-n", "default", "gated", "-o", "jsonpath={.status.phase}")
		ready = kubectl(t, "get", "pod", "-n", "default", "gated", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		cond = kubectl(t, "get", "pod", "-n", "default", "gated", "-o", `jsonpath={.status.conditions[?(@.type=="eni-operator.io/addresses-registered")].status}`)
		reason = kubectl(t, "get", "pod", "-n", "default", "gated", "-o", `jsonpath={.status.conditions[?(@.type=="eni-operator.io/addresses-registered")].reason}`)
		return
	}
	eventually(t, 2*time.Minute, "the pod running, not Ready, its gate Pending", func() error {
		if phase, ready, cond, reason := gate(); phase != "Running" || ready != "False" || cond != "False" || reason != "Pending" {
			return fmt.Errorf("phase %q, Ready %q, gate %q %q", phase, ready, cond, reason)
		}
		return nil
	})

	status := fmt.Sprintf(`[{"name":"aws-cni","interface":"eth0","ips":[%q],"default":true},`+
		`{"name":"default/e2e-secondary","interface":"net1","ips":["10.88.1.200"],"mac":%q}]`,
		kubectl(t, "get", "pod", "-n", "default", "gated", "-o", "jsonpath={.status.podIP}"), att.MACAddress)
	kubectl(t, "annotate", "pod", "-n", "default", "gated", "--overwrite", "k8s.v1.cni.cncf.io/network-status="+status)
	eventually(t, time.Minute, "the gate open and the pod Ready", func() error {
		if phase, ready, cond, reason := gate(); phase != "Running" || ready != "True" || cond != "True" || reason != "Registered" {
			return fmt.Errorf("phase %q, Ready %q, gate %q %q", phase, ready, cond, reason)
		}
		return nil
	})
	if en, err := eniNode(t); err != nil || len(en.Spec.PodAddresses) != 1 || en.Spec.PodAddresses[0].Address != "10.88.1.200" || en.Spec.PodAddresses[0].ENIID != att.ENIID {
		t.Errorf("the ENINode's record of pod addresses: %+v, %v", en, err)
	}
}
