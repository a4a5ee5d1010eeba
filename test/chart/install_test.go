package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The plain manifests install as docs/install.md says, for real: on a fresh
// API server (its own etcd and kube-apiserver, nothing installed, not
// even the CRD), `kubectl apply --server-side -k` of an overlay of
// config/default that sets only the cluster name, then of config/agent as
// it is. Every object is then read back, and the operator's configuration
// from the stored Deployment (CLUSTER_NAME from the stored ConfigMap) has
// the overlay's cluster name.
func TestKustomizeApplyOnFreshAPIServer(t *testing.T) {
	root := testenv.Root(t)
	assets, err := testenv.ControlPlaneAssets(root)
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")

	// config/default itself carries the placeholder, and only in the
	// ConfigMap: no --cluster-name argument overrides CLUSTER_NAME.
	base := kustomize(t, "default")
	if cm := find(t, base, "ConfigMap", ""); !strings.HasPrefix(cm.GetName(), "eni-operator-config-") || cm.Object["data"].(map[string]any)["cluster-name"] != "CHANGE-ME" {
		t.Errorf("config/default's ConfigMap %s: %v; want the placeholder cluster-name=CHANGE-ME", cm.GetName(), cm.Object["data"])
	}
	for _, a := range containerArgs(t, find(t, base, "Deployment", "eni-operator")) {
		if strings.HasPrefix(a, "--cluster-name") {
			t.Errorf("config/default passes %s: the cluster name comes from the ConfigMap only", a)
		}
	}

	fresh := testenv.StartEmptyControlPlane(t)
	cfg, kubeconfig := fresh.Admin(), fresh.Kubeconfig(t)

	// The user's overlay, exactly as config/default/kustomization.yaml
	// documents it (with a relative path to config/default).
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	kust := "resources:\n- " + filepath.ToSlash(rel) + `
configMapGenerator:
- name: eni-operator-config
  namespace: eni-operator
  behavior: merge
  literals:
  - cluster-name=test-cluster
`
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectlApply := func(dir string) {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--field-manager=install-test", "-k", dir)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl apply --server-side -k %s: %v\n%s", dir, err, out.String())
		}
		t.Logf("kubectl apply --server-side -k %s:\n%s", dir, out.String())
	}
	kubectlApply(overlay)
	kubectlApply(filepath.Join(root, "config", "agent"))

	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range []struct {
		group, version, kind, ns, name string
	}{
		{"", "v1", "Namespace", "", "eni-operator"},
		{"", "v1", "Namespace", "", "eni-system"},
		{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "nodeenis.networking.k8s.aws"},
		{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "eninodes.networking.k8s.aws"},
		{"", "v1", "ServiceAccount", "eni-operator", "eni-operator"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRole", "", "eni-operator"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "", "eni-operator"},
		{"apps", "v1", "Deployment", "eni-operator", "eni-operator"},
		{"", "v1", "Service", "eni-operator", "eni-operator-metrics"},
		{"policy", "v1", "PodDisruptionBudget", "eni-operator", "eni-operator"},
		{"", "v1", "ServiceAccount", "eni-system", "eni-agent"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRole", "", "eni-agent"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "", "eni-agent"},
		{"apps", "v1", "DaemonSet", "eni-system", "eni-agent"},
		{"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "", "eni-agent-own-node"},
		{"admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "", "eni-agent-own-node"},
	} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: o.group, Version: o.version, Kind: o.kind})
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: o.name}, u); err != nil {
			t.Errorf("%s %s/%s not installed: %v", o.kind, o.ns, o.name, err)
		}
	}
	// The operator's Role (ledger ConfigMaps, leader Lease) and its
	// binding, in the operator's namespace.
	for _, kind := range []string{"RoleList", "RoleBindingList"} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind})
		if err := k8s.List(ctx, l, client.InNamespace("eni-operator")); err != nil || len(l.Items) == 0 {
			t.Errorf("no %s in eni-operator: %v", strings.TrimSuffix(kind, "List"), err)
		}
	}

	// The cluster name reaches the operator: CLUSTER_NAME of the stored
	// Deployment, from the stored ConfigMap, is what --cluster-name
	// defaults to.
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "eni-operator", Name: "eni-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	var clusterName string
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name != "CLUSTER_NAME" || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.ConfigMapKeyRef
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: "eni-operator", Name: ref.Name}, cm); err != nil {
			t.Fatalf("the Deployment's CLUSTER_NAME names ConfigMap %s: %v", ref.Name, err)
		}
		clusterName = cm.Data[ref.Key]
	}
	t.Setenv("CLUSTER_NAME", clusterName)
	if c := checkOperatorArgs(t, dep.Spec.Template.Spec.Containers[0].Args); c.ClusterName != "test-cluster" {
		t.Errorf("the operator would run with cluster name %q, want the overlay's test-cluster", c.ClusterName)
	}
}

// helm template and helm lint work with nothing but the chart: no
// --kube-version (helm's default Kubernetes version, v1.20 for the helm
// make test builds), no namespace, with and without the agent.
func TestHelmTemplateWithoutFlags(t *testing.T) {
	c := newChart(t)
	objs := decode(t, c.run(t, "template", "eni-operator", c.dir))
	find(t, objs, "Deployment", "eni-operator")
	objs = decode(t, c.run(t, "template", "eni-operator", c.dir, "--set", "agent.enabled=true"))
	find(t, objs, "DaemonSet", "eni-operator-agent")
	find(t, objs, "ValidatingAdmissionPolicy", "")
	c.run(t, "lint", "--strict", c.dir)
}

// containerImage is the image of the first container of a workload.
func containerImage(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s %s has no containers", o.GetKind(), o.GetName())
	}
	img, _ := cs[0].(map[string]any)["image"].(string)
	return img
}

// readmeTags finds the image tags docs/install.md names:
// <anything>/eni-operator:<tag>, image.tag=<tag>, VERSION=<tag> and the
// ?ref=<tag> of a kustomize remote base.
var readmeTags = regexp.MustCompile(`(?:eni-operator:|image\.tag=|VERSION=|\?ref=)(v?[0-9][0-9A-Za-z.+-]*)`)

// The chart (appVersion, the default image), the plain manifests
// (config/default, config/agent) and docs/install.md's commands name
// one image and one tag.
func TestImageTagsAgree(t *testing.T) {
	c := newChart(t)
	var meta map[string]any
	readYAML(t, filepath.Join(c.dir, "Chart.yaml"), &meta)
	tag := fmt.Sprint(meta["appVersion"])
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+`).MatchString(tag) {
		t.Fatalf("Chart.yaml appVersion %q: want the release tag, v<major>.<minor>.<patch>", tag)
	}
	values := chartValues(t, c)
	str := func(path string) string {
		v, _ := lookup(values, path)
		s, _ := v.(string)
		return s
	}
	if imageTag := str("image.tag"); imageTag != "" && imageTag != tag {
		t.Errorf("values.yaml image.tag %q differs from appVersion %q", imageTag, tag)
	}
	want := str("image.repository") + ":" + tag

	objs := c.renderRelease(t, "rel", "agent.enabled=true")
	for _, o := range []*unstructured.Unstructured{find(t, objs, "Deployment", "rel-eni-operator"), find(t, objs, "DaemonSet", "rel-eni-operator-agent")} {
		if got := containerImage(t, o); got != want {
			t.Errorf("the chart's %s runs %s, want %s", o.GetKind(), got, want)
		}
	}
	if got := containerImage(t, find(t, kustomize(t, "default"), "Deployment", "eni-operator")); got != want {
		t.Errorf("config/default's Deployment runs %s, want %s", got, want)
	}
	if got := containerImage(t, find(t, kustomize(t, "agent"), "DaemonSet", "eni-agent")); got != want {
		t.Errorf("config/agent's DaemonSet runs %s, want %s", got, want)
	}

	b, err := os.ReadFile(filepath.Join(c.root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := readmeTags.FindAllStringSubmatch(string(b), -1)
	if len(found) == 0 {
		t.Fatal("docs/install.md names no image tag")
	}
	for _, m := range found {
		if m[1] != tag {
			t.Errorf("docs/install.md says %q; the chart's appVersion (and the manifests' tag) is %s", m[0], tag)
		}
	}
}
