package chart

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The operator's attachment definitions policy, from the chart and from
// config/rbac: its ServiceAccount, which RBAC lets write every
// NetworkAttachmentDefinition, writes only those labelled as a NodeENI's.
func TestOperatorDefinitionsPolicy(t *testing.T) {
	if _, err := envtest.InstallCRDs(shared.Env(t).Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(testenv.Root(t), "internal", "attachdefs", "testdata")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	c := newChart(t)
	t.Run("chart", func(t *testing.T) {
		install(t, c.renderRelease(t, "odp"), operatorPolicyKinds...)
		checkDefinitionsPolicy(t, namespace, "odp-eni-operator")
	})
	t.Run("config-rbac", func(t *testing.T) {
		install(t, kustomize(t, "rbac"), operatorPolicyKinds...)
		checkDefinitionsPolicy(t, "eni-operator", "eni-operator")
	})
	t.Run("in-step", func(t *testing.T) { policyInStep(t, c, "eni-operator-definitions") })
}

func definition(ns, name string, ours bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"config": `{"cniVersion":"0.3.1","type":"ipvlan","master":"eth1"}`},
	}}
	if ours {
		u.SetLabels(map[string]string{"eni-operator.io/nodeeni": "multus"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "networking.k8s.aws/v1alpha1", Kind: "NodeENI", Name: "multus",
			UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}})
	}
	return u
}

func checkDefinitionsPolicy(t *testing.T, ns, saName string) {
	ctx := context.Background()
	admin := adminClient(t)
	op := serviceAccount(t, ns, saName, nil)
	users := definition(ns, "users-"+saName, false)
	if err := admin.Create(ctx, users); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, definition(ns, "users-"+saName, false)) })
	// The policy reaches the admission plugin through an informer: wait
	// until it refuses.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := op.Create(ctx, definition(ns, "probe", false))
		if err == nil {
			_ = admin.Delete(ctx, definition(ns, "probe", false))
		}
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), nil
	}); err != nil {
		t.Fatalf("the definitions policy never refused the operator creating an unlabelled definition: %v", err)
	}
	// A stolen token's definition, labelled but controlled by no NodeENI,
	// would be left by the operator and the garbage collector alike.
	forged := definition(ns, "forged-"+saName, true)
	forged.SetOwnerReferences(nil)
	refusedByPolicy(t, "creating a labelled definition no NodeENI controls", op.Create(ctx, forged))
	forged.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "networking.k8s.aws/v1alpha1", Kind: "NodeENI", Name: "other",
		UID: "00000000-0000-0000-0000-000000000002", Controller: ptr.To(true)}})
	refusedByPolicy(t, "creating a definition controlled by a NodeENI its label does not name", op.Create(ctx, forged))
	mine := definition(ns, "mine-"+saName, true)
	if err := op.Create(ctx, mine); err != nil {
		t.Fatalf("creating its own definition: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("k8s.cni.cncf.io/v1")
	got.SetKind("NetworkAttachmentDefinition")
	if err := op.Get(ctx, client.ObjectKeyFromObject(users), got); err != nil {
		t.Fatal(err)
	}
	got.Object["spec"] = map[string]any{"config": `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0"}`}
	refusedByPolicy(t, "rewriting a user's definition", op.Update(ctx, got))
	got.SetLabels(map[string]string{"eni-operator.io/nodeeni": "multus"})
	refusedByPolicy(t, "labelling a user's definition as its own", op.Update(ctx, got))
	refusedByPolicy(t, "deleting a user's definition", op.Delete(ctx, definition(ns, "users-"+saName, false)))
	if err := op.Delete(ctx, mine); err != nil {
		t.Fatalf("deleting its own definition: %v", err)
	}
}
