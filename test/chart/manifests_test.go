package chart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/eni-operator/eni-operator/internal/cachedbin"
)

// The plain manifests of config/ (config/default: the operator;
// config/agent: the node agent) build with kustomize (kubectl's) and
// apply to a real API server (server-side dry run); the operator accepts
// the Deployment's arguments.
func TestKustomizeManifests(t *testing.T) {
	root, err := cachedbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if assets, err = cachedbin.ControlPlane(context.Background(), root, os.Stderr); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "default"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize config/default: %v\n%s", err, stderr.String())
	}
	objs := decode(t, stdout.String())
	for _, kind := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Namespace", "Deployment", "Service", "PodDisruptionBudget"} {
		find(t, objs, kind, "")
	}
	dep := find(t, objs, "Deployment", "eni-operator")
	cfg := checkOperatorArgs(t, containerArgs(t, dep))
	if !cfg.LeaderElection.Enabled {
		t.Error("two replicas without --leader-elect")
	}
	role := find(t, objs, "ClusterRole", "eni-operator")
	if !sameJSON(t, role.Object["rules"], rulesOf(t, filepath.Join(root, "config", "rbac", "role.yaml"))) {
		t.Error("kustomize changed the generated rules")
	}
	apply(t, objs)

	// The node agent's manifests (config/agent) apply too, with the
	// generated agent role.
	stdout.Reset()
	cmd = exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "agent"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize config/agent: %v\n%s", err, stderr.String())
	}
	agentObjs := decode(t, stdout.String())
	find(t, agentObjs, "DaemonSet", "")
	agentRole := find(t, agentObjs, "ClusterRole", "")
	if !sameJSON(t, agentRole.Object["rules"], rulesOf(t, filepath.Join(root, "config", "agent", "role.yaml"))) {
		t.Error("kustomize changed the generated agent rules")
	}
	apply(t, agentObjs)
}
