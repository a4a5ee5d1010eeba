package agent

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The generated agent role (config/agent/role.yaml) is enough to run the
// agent, as a ServiceAccount bound to nothing else — and it allows
// nothing beyond reading ENINodes and NodeENIs and patching ENINodes'
// status.
func TestAgentRoleIsEnough(t *testing.T) {
	w := newWorld(t, "n", 1)
	cfg := testenv.AsRole(t, shared.Env(t).Config, "config/agent/role.yaml", w.name("agent-role"),
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: w.name("sa"), Namespace: "eni-system"})
	as := testenv.Client(t, cfg)
	ctx := context.Background()

	w.addLink("ens5", w.mac(0), 1500)
	name := w.name("rbac")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "rbac" }, w.attachment(0, v1alpha1.AttachmentAttached))
	w.start(w.options(), cfg)
	w.eventually("configured and reported under the agent's role", func() (bool, string) {
		l, ok := w.linkByMAC(w.mac(0))
		e := w.entries(name)[w.enis[0].ID]
		return ok && l.Name == "rbac" && l.MTU == 9001 && e.State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v %+v", l, e)
	})

	// Nothing else: no spec writes, no deletes, no creates, no pods.
	ne := &v1alpha1.NodeENI{}
	if err := as.Get(ctx, client.ObjectKey{Name: name}, ne); err != nil {
		t.Fatal(err)
	}
	old := ne.DeepCopy()
	ne.Spec.MTU = 1500
	en := &v1alpha1.ENINode{}
	if err := as.Get(ctx, client.ObjectKey{Name: w.node}, en); err != nil {
		t.Fatal(err)
	}
	oldEN := en.DeepCopy()
	en.Spec.Attachments = nil
	status := ne.DeepCopy()
	status.Status.ReadyNodes = 7
	checks := map[string]error{
		"patch spec":           as.Patch(ctx, ne, client.MergeFrom(old)),
		"patch NodeENI status": as.Status().Patch(ctx, status, client.MergeFrom(old)),
		"delete":               as.Delete(ctx, old),
		"create":               as.Create(ctx, &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: w.name("x")}, Spec: old.Spec}),
		"patch ENINode spec":   as.Patch(ctx, en, client.MergeFrom(oldEN)),
		"delete ENINode":       as.Delete(ctx, oldEN),
		"create ENINode":       as.Create(ctx, &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: w.name("x")}}),
		"list pods":            as.List(ctx, &corev1.PodList{}),
		"get nodes":            as.Get(ctx, client.ObjectKey{Name: w.node}, &corev1.Node{}),
	}
	for what, err := range checks {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as the agent: %v; want Forbidden", what, err)
		}
	}
}
