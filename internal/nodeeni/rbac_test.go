package nodeeni_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"

	"github.com/eni-operator/eni-operator/internal/testenv"
)

// Item 9: the ClusterRole generated from the RBAC markers
// (config/rbac/role.yaml) is enough: the operator, running as a user bound
// to nothing else, creates, attaches and cleans up.
func TestGeneratedRoleIsEnough(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, threeNodes())
	ctx := context.Background()
	role.Name = "nodeeni-rbac-test"
	user := "nodeeni-rbac-test-user"
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	as, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := as.List(ctx, &v1alpha1.NodeENIList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before the binding, listing NodeENIs as %s: %v; want Forbidden (RBAC enforced)", user, err)
	}
	if err := h.k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.k8s.Delete(ctx, role) })
	if err := h.k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.k8s.Delete(ctx, binding) })

	h.cfg = cfg
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "rbac"})
	h.start(h.options())
	spec := h.multusSpec(map[string]string{"ng": "rbac"})
	h.createNodeENI("rbac", spec)
	h.ready("rbac", 1)
	h.waitENIs(1)
	h.deleteNodeENI("rbac")
	if n := len(h.enis()); n != 0 {
		t.Fatalf("%d ENIs left", n)
	}
}
