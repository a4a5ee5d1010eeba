package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// rbacDir holds the operator's RBAC and admission policies, the same
// objects the chart installs (a test in test/chart keeps them in step).
func rbacDir(root string) string { return filepath.Join(root, "config", "rbac") }

// rbacObjects reads every object of the files config/rbac's
// kustomization lists, in its order: what `kubectl apply -k config/rbac`
// would create.
func rbacObjects(root string) ([]*unstructured.Unstructured, error) {
	dir := rbacDir(root)
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("%s/kustomization.yaml lists no resources", dir)
	}
	var objs []*unstructured.Unstructured
	for _, f := range k.Resources {
		got, err := decodeObjects(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// decodeObjects decodes the objects of a multi-document YAML file; empty
// documents (comments only) are skipped.
func decodeObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: an object without kind or name", path)
		}
		objs = append(objs, u)
	}
}

// applyRBAC creates config/rbac's objects with the administrator's
// client; the operator's namespace must exist.
func applyRBAC(ctx context.Context, admin client.Client, root string) (int, error) {
	objs, err := rbacObjects(root)
	if err != nil {
		return 0, err
	}
	for _, u := range objs {
		if err := admin.Create(ctx, u); err != nil {
			return 0, fmt.Errorf("creating %s %s from %s: %w", u.GetKind(), u.GetName(), rel(root, rbacDir(root)), err)
		}
	}
	return len(objs), nil
}
