package chart

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The plain manifests of config/ (config/default: the operator;
// config/agent: the node agent) build with kustomize (kubectl's) and
// apply to a real API server (server-side dry run); the operator accepts
// the Deployment's arguments.
func TestKustomizeManifests(t *testing.T) {
	root := testenv.Root(t)
	objs := kustomize(t, "default")
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
	agentObjs := kustomize(t, "agent")
	ds := find(t, agentObjs, "DaemonSet", "")
	// Minimal like the chart's default: labelled nodes, only the
	// readiness taint tolerated (the agent is what it waits for),
	// NET_ADMIN only, metrics on loopback.
	ag := agentContainer(t, ds)
	sel, _, _ := unstructured.NestedStringMap(ds.Object, "spec", "template", "spec", "nodeSelector")
	tol, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "tolerations")
	priv, _, _ := unstructured.NestedBool(ag, "securityContext", "privileged")
	caps, _, _ := unstructured.NestedStringSlice(ag, "securityContext", "capabilities", "add")
	if sel["eni-operator.io/agent"] != "true" || fmt.Sprint(tol) != "[map[effect:NoSchedule key:eni-operator.io/interfaces-not-ready operator:Exists]]" || priv || fmt.Sprint(caps) != "[NET_ADMIN]" ||
		!slices.Contains(containerArgs(t, ds), "--metrics-bind-address=127.0.0.1:9810") {
		t.Errorf("config/agent's DaemonSet is not minimal: nodeSelector %v, tolerations %v, privileged %v, capabilities %v, args %v",
			sel, tol, priv, caps, containerArgs(t, ds))
	}
	find(t, agentObjs, "ValidatingAdmissionPolicy", "eni-agent-own-node")
	find(t, agentObjs, "ValidatingAdmissionPolicyBinding", "eni-agent-own-node")
	agentRole := find(t, agentObjs, "ClusterRole", "")
	if !sameJSON(t, agentRole.Object["rules"], rulesOf(t, filepath.Join(root, "config", "agent", "role.yaml"))) {
		t.Error("kustomize changed the generated agent rules")
	}
	apply(t, agentObjs)
}
