package chart

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The CRD step of the runbooks (docs/migration.md, docs/operations.md
// "Upgrade"), run as written on a fresh API server that holds an earlier
// NodeENI CRD, as the original's chart or an earlier release installed
// it: helm install leaves that CRD as it is (Helm creates only a chart's
// CRDs that are missing), and `kubectl apply --server-side
// --force-conflicts -f charts/eni-operator/crds/` brings this chart's
// schema.
func TestCRDStepOfTheRunbooks(t *testing.T) {
	c := newChart(t)
	root := testenv.Root(t)
	assets, err := testenv.ControlPlaneAssets(root)
	if err != nil {
		t.Fatal(err)
	}
	fresh := testenv.StartEmptyControlPlane(t)
	cfg, kubeconfig := fresh.Admin(), fresh.Kubeconfig(t)
	scheme := testenv.Scheme(t)
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	// The earlier CRD: this one without spec.tags, created by Helm.
	earlier := nodeENICRD(t, root)
	delete(earlier.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "tags")
	raw, err := yaml.Marshal(earlier)
	if err != nil {
		t.Fatal(err)
	}
	earlierFile := filepath.Join(t.TempDir(), "earlier.yaml")
	if err := os.WriteFile(earlierFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	if out, err := run(kubectl, "--kubeconfig", kubeconfig, "create", "-f", earlierFile, "--field-manager=helm"); err != nil {
		t.Fatalf("creating the earlier CRD: %v\n%s", err, out)
	}

	if out, err := run(c.helm, "install", "eni-operator", c.dir, "--kubeconfig", kubeconfig, "--namespace", "eni-operator",
		"--create-namespace", "--set", "clusterName=runbook"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	if hasTags(t, k8s) || !eniNodeCRD(t, k8s) {
		t.Fatal("helm install changed the NodeENI CRD it found, or did not create the missing ENINode CRD; the runbooks assume it creates only what is missing")
	}

	crds := filepath.Join(c.dir, "crds")
	if out, err := run(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", crds); err == nil || !strings.Contains(out, "conflict") {
		t.Errorf("without --force-conflicts: %v\n%s; want the conflict with Helm's fields the runbooks' flag is for", err, out)
	}
	if out, err := run(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		t.Fatalf("the runbooks' CRD step: %v\n%s", err, out)
	}
	if !hasTags(t, k8s) || !eniNodeCRD(t, k8s) {
		t.Error("after the CRD step: the NodeENI schema is not this chart's, or the ENINode CRD is missing")
	}
}

func nodeENICRD(t *testing.T, root string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "charts", "eni-operator", "crds", "networking.k8s.aws_nodeenis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// hasTags tells whether the stored NodeENI CRD has spec.tags.
func hasTags(t *testing.T, k8s client.Client) bool {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "nodeenis.networking.k8s.aws"}, crd); err != nil {
		t.Fatal(err)
	}
	_, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["tags"]
	return ok
}

func eniNodeCRD(t *testing.T, k8s client.Client) bool {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKey{Name: "eninodes.networking.k8s.aws"}, &apiextensionsv1.CustomResourceDefinition{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
