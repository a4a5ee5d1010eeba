package nodeeni_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// Item 9: the ClusterRole generated from the RBAC markers
// (config/rbac/role.yaml) is enough: the operator, running as a user bound
// to nothing else, creates, attaches and cleans up.
func TestGeneratedRoleIsEnough(t *testing.T) {
	h, _ := nodesHarness(t, 1, "rbac")
	h.cfg = testenv.AsRole(t, shared.Env(t).Config, "config/rbac/role.yaml", "nodeeni-rbac-test",
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "nodeeni-rbac-test-user"})
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
