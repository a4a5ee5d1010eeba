package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/operator"
)

// The operator's names policy, from the chart and from config/rbac: its
// ServiceAccount, which RBAC lets create any Lease and Secret in its
// namespace (create cannot be limited by name), creates only its leader
// election Lease and its ownership key ring's Secret.
func TestOperatorNamesPolicy(t *testing.T) {
	c := newChart(t)
	t.Run("chart", func(t *testing.T) {
		install(t, c.renderRelease(t, "onp"), operatorPolicyKinds...)
		checkNamesPolicy(t, namespace, "onp-eni-operator")
	})
	t.Run("config-rbac", func(t *testing.T) {
		install(t, kustomize(t, "rbac"), operatorPolicyKinds...)
		checkNamesPolicy(t, "eni-operator", "eni-operator")
	})
	t.Run("in-step", func(t *testing.T) { policyInStep(t, c, "eni-operator-names") })
}

func checkNamesPolicy(t *testing.T, ns, saName string) {
	ctx := context.Background()
	admin := adminClient(t)
	op := serviceAccount(t, ns, saName, nil)
	lease := func(name string) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	secret := func(name string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"k": []byte("v")}}
	}
	// The policy reaches the admission plugin through an informer: wait
	// until it refuses.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := op.Create(ctx, lease("probe-lease"))
		if err == nil {
			_ = admin.Delete(ctx, lease("probe-lease"))
		}
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatalf("the names policy never refused the operator creating another Lease: %v", err)
	}
	refusedByPolicy(t, "creating Lease other-lease", op.Create(ctx, lease("other-lease")))
	refusedByPolicy(t, "creating Secret other-secret", op.Create(ctx, secret("other-secret")))
	for _, own := range []client.Object{lease(operator.LeaderElectionID), secret(operator.DefaultOwnershipKeySecret)} {
		_ = admin.Delete(ctx, own)
		if err := op.Create(ctx, own); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("creating its own %T %s: %v", own, own.GetName(), err)
		}
		_ = admin.Delete(ctx, own)
	}
}
