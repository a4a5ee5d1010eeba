package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// AsRole returns a config of cfg's API server that acts as subject (a
// User, or a ServiceAccount with its groups) bound to nothing but the
// ClusterRole of the repository's file (such as config/rbac/role.yaml),
// created as name. It checks first that subject may not list NodeENIs
// (RBAC is enforced), then waits until the binding is in force; the role
// and the binding are deleted when the test ends.
func AsRole(t testing.TB, cfg *rest.Config, file, name string, subject rbacv1.Subject) *rest.Config {
	t.Helper()
	root := Root(t)
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		t.Fatal(err)
	}
	role.Name = name
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{subject}}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: subject.Name}
	if subject.Kind == rbacv1.ServiceAccountKind {
		as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + subject.Namespace + ":" + subject.Name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + subject.Namespace, "system:authenticated"}}
	}
	ctx := context.Background()
	admin, user := Client(t, cfg), Client(t, as)
	if err := user.List(ctx, &v1alpha1.NodeENIList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("before the binding, listing NodeENIs as %s: %v; want Forbidden (RBAC enforced)", as.Impersonate.UserName, err)
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, o) })
	}
	Eventually(t, "the binding is in force", 15*time.Second, func() (bool, string) {
		err := user.List(ctx, &v1alpha1.NodeENIList{})
		return err == nil, fmt.Sprint(err)
	})
	return as
}
