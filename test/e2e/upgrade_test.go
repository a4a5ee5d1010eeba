package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUpgradeRollback: helm upgrade (a changed value, so the Deployment
// rolls both replicas and the Lease changes hands) and helm rollback
// with a tagged pod and a NodeENI's attached ENI in flight: the ENI stays
// attached under the same attachment, the pod's tags stay, the operators
// come back Ready, and the pod then deletes normally and is untagged.
// Both revisions are the working tree's chart and image; the upgrade from
// the previous release is TestUpgradeFromPreviousRelease.
func TestUpgradeRollback(t *testing.T) {
	requireNode(t)
	installChart(t)
	ctx := context.Background()

	kubectl(t, "label", "node", nodeName, "--overwrite", "ng=e2e")
	apply(t, nodeENI)
	att := attachedENI(t)
	const pod = "upgrade-tagged"
	apply(t, taggedPod(pod, "Stage=upgrade"))
	kubectl(t, "wait", "--for=condition=Ready", "--timeout=2m", "pod/"+pod, "-n", "default")
	ip := kubectl(t, "get", "pod", pod, "-n", "default", "-o", "jsonpath={.status.podIP}")
	eventually(t, time.Minute, "the pod's ENI tagged", func() error { return hasTag(ctx, ip, "Stage", "upgrade") })

	unchanged := func(step, logLevel string) {
		t.Helper()
		args := kubectl(t, "get", "deployment", release, "-n", namespace, "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if !strings.Contains(args, "--zap-log-level="+logLevel) {
			t.Fatalf("%s: the Deployment's args %s lack --zap-log-level=%s", step, args, logLevel)
		}
		kubectl(t, "rollout", "status", "deployment/"+release, "-n", namespace, "--timeout=3m")
		eventually(t, 2*time.Minute, step+": two Ready operator pods", func() error {
			if r := readyOperators(t); len(r) != 2 {
				return fmt.Errorf("ready: %v", r)
			}
			return nil
		})
		// Let the new leader run a pass over the pods and NodeENIs.
		time.Sleep(10 * time.Second)
		id, err := eniAttachmentID(ctx, att.ENIID)
		if err != nil || id != att.AttachmentID {
			t.Fatalf("%s: %s's attachment %q (%v), want %s unchanged", step, att.ENIID, id, err, att.AttachmentID)
		}
		if err := hasTag(ctx, ip, "Stage", "upgrade"); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}

	start := time.Now()
	helm(t, "upgrade", release, "../../charts/eni-operator", "--namespace", namespace, "--reuse-values",
		"--set", "operator.logging.level=debug", "--wait", "--timeout", "3m")
	unchanged("after helm upgrade", "debug")
	t.Logf("upgrade took %s", time.Since(start).Round(time.Second))
	start = time.Now()
	helm(t, "rollback", release, "1", "--namespace", namespace, "--wait", "--timeout", "3m")
	unchanged("after helm rollback", "info")
	t.Logf("rollback took %s", time.Since(start).Round(time.Second))

	deleteAndCheckUntagged(t, pod, ip, "Stage", "upgrade")
}

// deleteAndCheckUntagged deletes pod through the kubelet (no --force) and
// waits until the ENI holding ip no longer carries key=value.
func deleteAndCheckUntagged(t *testing.T, pod, ip, key, value string) {
	t.Helper()
	kubectl(t, "delete", "pod", pod, "-n", "default", "--timeout=1m")
	eventually(t, time.Minute, "the deleted pod's ENI untagged", func() error {
		if err := hasTag(context.Background(), ip, key, value); err == nil {
			return fmt.Errorf("still tagged")
		}
		return nil
	})
}

// hasTag says why the ENI holding ip lacks key=value, or nil.
func hasTag(ctx context.Context, ip, key, value string) error {
	tags, err := eniTags(ctx, ip)
	if err == nil && tags[key] != value {
		err = fmt.Errorf("ENI of %s: tags %v, want %s=%s", ip, tags, key, value)
	}
	return err
}

// helm runs helm against the node and fails the test on error.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helmOutput(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}
