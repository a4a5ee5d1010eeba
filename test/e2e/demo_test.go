package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDemo is `make demo NODE=real`: the shared installation (the working
// tree's chart, images and agent) with a NodeENI and a tagged pod on the
// real node, kept until SIGINT or SIGTERM; then the node is torn down as
// after any run. Skipped unless ENI_E2E_DEMO is set.
func TestDemo(t *testing.T) {
	if os.Getenv("ENI_E2E_DEMO") == "" {
		t.Skip("make demo NODE=real runs it (ENI_E2E_DEMO=1)")
	}
	requireNode(t)
	installChart(t)
	ctx := context.Background()

	kubectl(t, "label", "node", nodeName, "--overwrite", "eni-operator.io/agent=true", "ng=e2e")
	apply(t, nodeENI)
	const pod, tags = "demo", "Team=demo,CostCenter=42"
	apply(t, taggedPod(pod, tags))
	kubectl(t, "wait", "--for=condition=Ready", "--timeout=2m", "pod/"+pod, "-n", "default")
	ip := kubectl(t, "get", "pod", pod, "-n", "default", "-o", "jsonpath={.status.podIP}")
	eventually(t, time.Minute, "the demo pod's ENI tagged", func() error { return hasTag(ctx, ip, "Team", "demo") })
	var eni string
	eventually(t, 2*time.Minute, "the NodeENI's ENI in the node's ENINode", func() error {
		en, err := eniNode(t)
		if err == nil && len(en.Spec.Attachments) == 0 {
			err = fmt.Errorf("no attachment yet")
		}
		if err == nil {
			eni = en.Spec.Attachments[0].ENIID + " attached as " + en.Spec.Attachments[0].AttachmentID
		}
		return err
	})

	waitsForInterrupt.Store(true)
	bin := filepath.Join(os.Getenv("ENI_E2E_CONTROL_PLANE"), "kubectl")
	fmt.Printf(`e2e demo: ready: node %s runs release %s (namespace %s) with its agent;
NodeENI e2e-secondary: %s; pod default/%s (%s) has its ENI tagged %s.
Try, in another shell:
  export KUBECONFIG=%s
  alias kubectl=%s
  kubectl get pods -A -o wide
  kubectl get nodeenis,eninodes -o wide
  kubectl annotate pod %s --overwrite eni-tagger.io/tags=Team=demo,Stage=try
  kubectl logs -n %s -l app.kubernetes.io/component=operator --prefix --tail 20
The EC2 emulator answers on %s; daemons' logs are in %s.
Ctrl-C stops the demo and tears the node down.
`, nodeName, release, namespace, eni, pod, ip, tags, node.Kubeconfig, bin, pod, namespace,
		node.EmulatorURL, logDir())
	<-interrupted.Done()
	fmt.Println("e2e demo: interrupted: tearing the node down")
}

// logDir is where the daemons log (config's default unless ENI_E2E_LOG_DIR).
func logDir() string {
	if d := os.Getenv("ENI_E2E_LOG_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "eni-e2e-logs")
}
