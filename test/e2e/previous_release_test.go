package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The previous release (test/e2e/previous-release, built by
// hack/e2e/previous-release.sh into ENI_E2E_PREVIOUS) runs as its own
// release in its own namespace, the shared installation uninstalled.
const (
	prevRelease   = "eni-operator-previous"
	prevNamespace = "eni-previous"
	prevOperators = "app.kubernetes.io/instance=" + prevRelease + ",app.kubernetes.io/component=operator"
	prevAgents    = "app.kubernetes.io/instance=" + prevRelease + ",app.kubernetes.io/component=agent"
	// chartCRDs are the working tree's CRDs, applied as docs/operations.md
	// tells users to before helm upgrade (Helm never upgrades crds/).
	chartCRDs  = "../../charts/eni-operator/crds/"
	nodeENICRD = "nodeenis.networking.k8s.aws"
	eniNodeCRD = "eninodes.networking.k8s.aws"
	prevPod    = "previous-tagged"
)

// TestUpgradeFromPreviousRelease: the previous release's chart, CRDs and
// images (from before ENINodes) with a NodeENI's attached ENI and a tagged
// pod; then the working tree's CRDs (server-side apply) and helm upgrade
// to the working tree's chart and images; then helm rollback. At each
// step: the same attachment, the pod's tags kept, operators and agent
// Ready, no pod stuck; after the upgrade the node's ENINode lists the
// attachment; after the rollback the CRDs stay the new ones and the
// previous operator lists the attachment in the NodeENI's status again.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	requireNode(t)
	prev := os.Getenv("ENI_E2E_PREVIOUS")
	if prev == "" {
		t.Fatal("ENI_E2E_PREVIOUS is not set (make e2e sets it)")
	}
	ctx := context.Background()
	uninstallShared(t)
	// The previous release's CRDs, as its users have them: the working
	// tree's go, with any NodeENI and ENINode left.
	kubectl(t, "delete", "crd", nodeENICRD, eniNodeCRD, "--ignore-not-found", "--timeout=1m")
	t.Cleanup(func() { cleanupPrevious(t) })
	installPrevious(t, prev)
	if _, err := node.Kubectl("get", "crd", eniNodeCRD); err == nil {
		t.Fatal("the previous release's chart created the ENINode CRD: not the release before ENINodes")
	}

	kubectl(t, "label", "node", nodeName, "--overwrite", "eni-operator.io/agent=true", "ng=e2e")
	apply(t, nodeENI)
	var eni, attachment string
	eventually(t, 2*time.Minute, "the NodeENI's ENI attached (its status.attachments)", func() error {
		var err error
		eni, attachment, err = statusAttachment()
		return err
	})
	apply(t, taggedPod(prevPod, "Stage=previous"))
	kubectl(t, "wait", "--for=condition=Ready", "--timeout=2m", "pod/"+prevPod, "-n", "default")
	ip := kubectl(t, "get", "pod", prevPod, "-n", "default", "-o", "jsonpath={.status.podIP}")
	eventually(t, time.Minute, "the pod's ENI tagged", func() error { return hasTag(ctx, ip, "Stage", "previous") })
	t.Logf("previous release: %s attached as %s, pod %s (%s) tagged", eni, attachment, prevPod, ip)

	unchanged := func(step, tag string) {
		t.Helper()
		previousSettled(t, step, tag)
		id, err := eniAttachmentID(ctx, eni)
		if err != nil || id != attachment {
			t.Fatalf("%s: %s's attachment %q (%v), want %s unchanged", step, eni, id, err, attachment)
		}
		if err := hasTag(ctx, ip, "Stage", "previous"); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	unchanged("previous release", previousValue(t, prev, "image.tag"))

	if err := importImages(); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", chartCRDs)
	generation := kubectl(t, "get", "crd", nodeENICRD, "-o", "jsonpath={.metadata.generation}")
	start := time.Now()
	if out, err := helmOutput("upgrade", prevRelease, "../../charts/eni-operator", "--namespace", prevNamespace, "--reuse-values",
		"--set", "image.repository="+os.Getenv("ENI_E2E_IMAGE_REPO"),
		"--set", "image.tag="+os.Getenv("ENI_E2E_VERSION"),
		"--set", "agent.image.repository="+os.Getenv("ENI_E2E_AGENT_IMAGE_REPO"),
		"--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, diagnoseIn(prevNamespace, prevOperators))
	}
	unchanged("after helm upgrade", os.Getenv("ENI_E2E_VERSION"))
	eventually(t, time.Minute, "after helm upgrade: the node's ENINode listing "+eni, func() error {
		return eniNodeLists(t, eni, attachment)
	})
	t.Logf("upgrade took %s", time.Since(start).Round(time.Second))

	start = time.Now()
	if out, err := helmOutput("rollback", prevRelease, "1", "--namespace", prevNamespace, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, diagnoseIn(prevNamespace, prevOperators))
	}
	unchanged("after helm rollback", previousValue(t, prev, "image.tag"))
	if g := kubectl(t, "get", "crd", nodeENICRD, "-o", "jsonpath={.metadata.generation}"); g != generation {
		t.Errorf("after helm rollback: the NodeENI CRD's generation %s, want %s (rollback leaves CRDs alone)", g, generation)
	}
	// Nothing of the previous release knows ENINodes: the upgraded
	// operator's entry stays as it was.
	if err := eniNodeLists(t, eni, attachment); err != nil {
		t.Errorf("after helm rollback: %v", err)
	}
	eventually(t, time.Minute, "after helm rollback: the previous operator listing "+eni+" in the NodeENI's status", func() error {
		e, a, err := statusAttachment()
		if err == nil && (e != eni || a != attachment) {
			err = fmt.Errorf("status lists %s as %s, want %s as %s", e, a, eni, attachment)
		}
		return err
	})
	t.Logf("rollback took %s", time.Since(start).Round(time.Second))

	deleteAndCheckUntagged(t, prevPod, ip, "Stage", "previous")
}

// installPrevious imports the previous release's images and installs its
// chart with the values the shared installation has.
func installPrevious(t *testing.T, prev string) {
	t.Helper()
	for _, img := range []string{"eni-operator-image.tar", "eni-agent-image.tar"} {
		if err := node.ImportImage(filepath.Join(prev, img)); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"install", prevRelease, filepath.Join(prev, "chart"),
		"--namespace", prevNamespace, "--create-namespace", "--wait", "--timeout", "3m"}
	for _, k := range []string{"image.repository", "image.tag", "agent.image.repository"} {
		args = append(args, "--set", k+"="+previousValue(t, prev, k))
	}
	start := time.Now()
	if out, err := helmOutput(append(args, nodeValues("eni-agent-previous")...)...); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, diagnoseIn(prevNamespace, prevOperators))
	}
	t.Logf("helm install of the previous release took %s", time.Since(start).Round(time.Second))
}

// previousValue is a chart value of the previous release's images
// (hack/e2e/previous-release.sh writes them to values).
func previousValue(t *testing.T, prev, key string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(prev, "values"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v
		}
	}
	t.Fatalf("%s/values has no %s", prev, key)
	return ""
}

// previousSettled waits for the release's Deployment and DaemonSet to run
// image tag, two operators and the agent Ready, and every pod of its
// namespace and the tagged pod Ready (none stuck terminating), then lets
// the leader run a pass.
func previousSettled(t *testing.T, step, tag string) {
	t.Helper()
	for _, w := range []string{"deployment/" + prevRelease, "daemonset/" + prevRelease + "-agent"} {
		kubectl(t, "rollout", "status", w, "-n", prevNamespace, "--timeout=3m")
		image := kubectl(t, "get", w, "-n", prevNamespace, "-o", "jsonpath={.spec.template.spec.containers[0].image}")
		if !strings.HasSuffix(image, ":"+tag) {
			t.Fatalf("%s: %s runs %s, want tag %s", step, w, image, tag)
		}
	}
	eventually(t, 2*time.Minute, step+": operators and agent Ready, no pod stuck", func() error {
		all := strings.Fields(kubectl(t, "get", "pods", "-n", prevNamespace, "-o", "jsonpath={.items[*].metadata.name}"))
		ready := readyPods(t, prevNamespace, "")
		ops, agents := readyPods(t, prevNamespace, prevOperators), readyPods(t, prevNamespace, prevAgents)
		if len(ops) != 2 || len(agents) != 1 || len(ready) != len(all) {
			return fmt.Errorf("operators %v, agents %v Ready; pods %v, Ready %v", ops, agents, all, ready)
		}
		if r := readyPods(t, "default", "!app.kubernetes.io/instance"); len(r) != 1 || r[0] != prevPod {
			return fmt.Errorf("Ready pods in default: %v, want [%s]", r, prevPod)
		}
		return nil
	})
	time.Sleep(10 * time.Second)
}

// statusAttachment is the ENI and attachment the NodeENI's status lists
// for the node (where the previous operator reports them).
func statusAttachment() (eni, attachment string, err error) {
	out, err := node.Kubectl("get", "nodeeni", "e2e-secondary", "-o",
		`jsonpath={range .status.attachments[*]}{.nodeID} {.eniID} {.attachmentID}{"\n"}{end}`)
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == nodeName {
			return f[1], f[2], nil
		}
	}
	return "", "", fmt.Errorf("status.attachments: %q", out)
}

// eniNodeLists says why the node's ENINode lacks eni under attachment.
func eniNodeLists(t *testing.T, eni, attachment string) error {
	en, err := eniNode(t)
	if err != nil {
		return err
	}
	for _, a := range en.Spec.Attachments {
		if a.ENIID == eni && a.AttachmentID == attachment {
			return nil
		}
	}
	return fmt.Errorf("ENINode attachments %+v, want %s as %s", en.Spec.Attachments, eni, attachment)
}

// cleanupPrevious removes what the test made, whatever step it stopped
// at, and leaves the working tree's CRDs for the tests after it.
func cleanupPrevious(t *testing.T) {
	steps := [][]string{
		{"delete", "pod", prevPod, "-n", "default", "--ignore-not-found", "--timeout=1m"},
		{"delete", nodeENICRD, "--all", "--timeout=2m"},
	}
	for _, args := range steps {
		if out, err := node.Kubectl(args...); err != nil {
			t.Errorf("cleanup: %v\n%s", err, out)
		}
	}
	if out, err := helmOutput("uninstall", prevRelease, "--namespace", prevNamespace, "--wait", "--timeout", "2m"); err != nil {
		t.Errorf("cleanup: %v\n%s", err, out)
	}
	steps = [][]string{
		{"delete", "namespace", prevNamespace, "--timeout=2m"},
		{"apply", "--server-side", "--force-conflicts", "-f", chartCRDs},
		// The upgraded operator's ENINode, which nothing of the previous
		// release removes.
		{"delete", eniNodeCRD, "--all"},
	}
	for _, args := range steps {
		if out, err := node.Kubectl(args...); err != nil {
			t.Errorf("cleanup: %v\n%s", err, out)
		}
	}
}
