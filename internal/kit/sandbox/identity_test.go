package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// sandboxCluster starts the sandbox's control plane (its CRDs, its
// operator namespace) and a pod in the demo namespace; it returns the
// admin config and client.
func sandboxCluster(t *testing.T) (Options, *rest.Config, client.Client) {
	t.Helper()
	root := testenv.Root(t)
	assets, err := testenv.ControlPlaneAssets(root)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Root: root, Dir: t.TempDir(), Progress: io.Discard, Out: io.Discard}
	o.defaults()
	ctx := context.Background()
	cp, _, err := startControlPlane(ctx, o, assets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	admin, err := newClient(cp.Admin())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{operatorNamespace, demoNamespace} {
		if err := createNamespace(ctx, admin, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "web-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return o, cp.Admin(), admin
}

// patchPod merge-patches demo/web-0 as cfg.
func patchPod(cfg *rest.Config, patch string) error {
	c, err := newClient(cfg)
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "web-0"}}
	return c.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// The sandbox's operator is, to the API server, its ServiceAccount with
// a token's groups, under config/rbac: what it writes (its record
// annotation) is admitted, a pod's labels are refused by the chart's
// admission policy; with --operator-as-admin it is the administrator and
// nothing refuses it.
func TestOperatorRunsAsItsServiceAccountUnderTheChartsPolicies(t *testing.T) {
	o, adminCfg, admin := sandboxCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg, err := operatorAccess(ctx, o, adminCfg, admin)
	if err != nil {
		t.Fatal(err)
	}
	u, err := whoAmI(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "system:serviceaccount:eni-operator:eni-operator" ||
		strings.Join(u.Groups, " ") != "system:serviceaccounts system:serviceaccounts:eni-operator system:authenticated" {
		t.Errorf("the operator is %+v to the API server, want its ServiceAccount", u)
	}
	own := `{"metadata":{"annotations":{"` + tagger.LastAppliedTagsAnnotation + `":"{}"}}}`
	if err := patchPod(cfg, own); err != nil {
		t.Errorf("the operator's own record refused: %v", err)
	}
	err = patchPod(cfg, `{"metadata":{"labels":{"stolen":"token"}}}`)
	if !isPolicyRefusal(err) || !strings.Contains(err.Error(), "eni-operator-writes") {
		t.Errorf("patching a pod's labels as the operator: %v; want refused by ValidatingAdmissionPolicy eni-operator-writes", err)
	}

	o.OperatorAsAdmin = true
	cfg, err = operatorAccess(ctx, o, adminCfg, admin)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := whoAmI(ctx, cfg); err != nil || u.Username != "admin" {
		t.Errorf("with --operator-as-admin the operator is %+v (%v), want admin", u, err)
	}
	if err := patchPod(cfg, `{"metadata":{"labels":{"admin":"yes"}}}`); err != nil {
		t.Errorf("with --operator-as-admin, patching a pod's labels: %v", err)
	}
	if !strings.Contains(describeIdentity(u, true), "--operator-as-admin") {
		t.Errorf("the access summary does not say the operator runs as admin: %s", describeIdentity(u, true))
	}
}

// Every object of config/rbac's kustomization is read, in its order:
// the roles, the ServiceAccount, the bindings and the four policies with
// their bindings.
func TestRBACObjectsAreTheKustomizations(t *testing.T) {
	objs, err := rbacObjects(testenv.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
	}
	want := map[string]int{"ClusterRole": 2, "Role": 1, "ServiceAccount": 1, "ClusterRoleBinding": 1, "RoleBinding": 1,
		"ValidatingAdmissionPolicy": 4, "ValidatingAdmissionPolicyBinding": 4}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s objects, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}
