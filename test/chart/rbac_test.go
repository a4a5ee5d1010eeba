package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/operator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// renderRelease runs helm template for release rel in namespace with
// --set values.
func (c chart) renderRelease(t *testing.T, rel string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", rel, c.dir, "--namespace", namespace, "--kube-version", kubeVersion}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return decode(t, c.run(t, args...))
}

// installOperator installs the objects of kinds of the chart's release
// rel (with --set values) and returns a client acting as its operator's
// ServiceAccount.
func (c chart) installOperator(t *testing.T, kinds []string, rel string, set ...string) client.Client {
	t.Helper()
	install(t, c.renderRelease(t, rel, set...), kinds...)
	return serviceAccount(t, namespace, rel+"-eni-operator", nil)
}

// kustomize builds one directory of config/ with kubectl's kustomize.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, string(testenv.Kustomize(t, dir)))
}

// install applies objects of the given kinds for real (server-side
// apply, not a dry run), creating the namespaces they go into.
func install(t *testing.T, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	k8s := adminClient(t)
	ctx := context.Background()
	for _, o := range objs {
		if !slices.Contains(kinds, o.GetKind()) {
			continue
		}
		if ns := o.GetNamespace(); ns != "" {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.ForceOwnership, client.FieldOwner("chart-test")); err != nil {
			t.Fatalf("applying %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	s, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(shared.Env(t).Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}

// serviceAccount is a client acting as a ServiceAccount (impersonation:
// the API server authorises every request as that account), with extra
// user info when given.
func serviceAccount(t *testing.T, ns, name string, extra map[string][]string) client.Client {
	t.Helper()
	cfg := asServiceAccount(t, ns, name)
	cfg.Impersonate.Extra = extra
	s, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// asServiceAccount is a rest config impersonating a ServiceAccount.
func asServiceAccount(t testing.TB, ns, name string) *rest.Config {
	cfg := rest.CopyConfig(shared.Env(t).Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	return cfg
}

// access is one question to the authoriser: verb on group/resource
// (/subresource), in ns (empty: cluster-wide), with name (empty: any).
type access struct {
	verb, group, resource, sub, ns, name string
}

func (a access) String() string {
	r := a.resource
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := "cluster-wide"
	if a.ns != "" {
		where = "in " + a.ns
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// can asks the API server (SelfSubjectAccessReview, as c's user) whether
// the access is allowed: what `kubectl auth can-i --as` answers.
func can(t *testing.T, c client.Client, a access) bool {
	t.Helper()
	r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource,
			Subresource: a.sub, Namespace: a.ns, Name: a.name}}}
	if err := c.Create(context.Background(), r); err != nil {
		t.Fatalf("SelfSubjectAccessReview %s: %v", a, err)
	}
	return r.Status.Allowed
}

// expectAccess checks every access against want, after waiting for the
// first allowed one to be in force (RBAC objects reach the authoriser
// through its informers).
func expectAccess(t *testing.T, who string, c client.Client, allowed, refused []access) {
	t.Helper()
	if len(allowed) > 0 {
		if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
			func(context.Context) (bool, error) { return can(t, c, allowed[0]), nil }); err != nil {
			t.Fatalf("%s: %s never allowed", who, allowed[0])
		}
	}
	for _, a := range allowed {
		if !can(t, c, a) {
			t.Errorf("%s may not %s; the operator needs it", who, a)
		}
	}
	for _, a := range refused {
		if can(t, c, a) {
			t.Errorf("%s may %s", who, a)
		}
	}
}

var rbacKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// What no operator ServiceAccount may ever do, wherever it is installed.
func neverAllowed(ns string) []access {
	var out []access
	for _, n := range []string{"", "kube-system", ns, "team-a"} {
		out = append(out,
			access{"get", "", "secrets", "", n, ""}, access{"list", "", "secrets", "", n, ""},
			access{"delete", "", "pods", "", n, ""}, access{"create", "", "pods", "", n, ""},
			access{"update", "", "pods", "", n, ""}, access{"create", "", "pods", "exec", n, ""},
			access{"list", "", "configmaps", "", n, ""}, access{"watch", "", "configmaps", "", n, ""},
			access{"update", "coordination.k8s.io", "leases", "", n, "other-lease"},
			access{"delete", "networking.k8s.aws", "nodeenis", "", "", ""},
			access{"create", "rbac.authorization.k8s.io", "rolebindings", "", n, ""})
	}
	for _, v := range []string{"get", "update", "patch", "create", "delete"} {
		out = append(out, access{v, "", "configmaps", "", "kube-system", "aws-auth"})
	}
	return out
}

// The operator's RBAC as the chart renders it, applied to a real API
// server and asked as the rendered ServiceAccount: ConfigMaps only the
// ledger's, in the release namespace; the Lease only there; pods
// patched, never created or deleted, and only in the watched namespace
// when one is set; no secrets anywhere.
func TestChartRBACLeastPrivilege(t *testing.T) {
	c := newChart(t)
	ledger := func(i int) string { return fmt.Sprintf("eni-tagger-cache-%02d", i) }
	const lease = operator.LeaderElectionID

	t.Run("default", func(t *testing.T) {
		sa := c.installOperator(t, rbacKinds, "rbd")
		allowed := []access{
			{"patch", "", "pods", "", "team-b", "p"}, {"list", "", "pods", "", "", ""}, {"watch", "", "pods", "", "", ""},
			{"patch", "", "pods", "status", "team-b", "p"},
			{"create", "events.k8s.io", "events", "", "team-b", ""}, {"create", "events.k8s.io", "events", "", "default", ""},
			{"get", "", "configmaps", "", namespace, ledger(0)}, {"patch", "", "configmaps", "", namespace, ledger(15)},
			{"create", "", "configmaps", "", namespace, ledger(3)},
			{"create", "coordination.k8s.io", "leases", "", namespace, ""},
			{"get", "coordination.k8s.io", "leases", "", namespace, lease}, {"update", "coordination.k8s.io", "leases", "", namespace, lease},
			{"create", "authentication.k8s.io", "tokenreviews", "", "", ""}, {"create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""},
			{"list", "", "nodes", "", "", ""}, {"patch", "networking.k8s.aws", "nodeenis", "status", "", "x"},
		}
		refused := append(neverAllowed(namespace),
			access{"patch", "", "configmaps", "", namespace, "other"}, access{"patch", "", "configmaps", "", namespace, ledger(16)},
			access{"create", "", "configmaps", "", namespace, ""}, access{"patch", "", "configmaps", "", "team-b", ledger(0)},
			access{"create", "coordination.k8s.io", "leases", "", "kube-system", ""},
			access{"update", "coordination.k8s.io", "leases", "", "kube-system", lease},
			access{"get", "coordination.k8s.io", "leases", "", "team-b", lease})
		expectAccess(t, "the operator (default values)", sa, allowed, refused)

		// What the ledger and leader election really do works with these
		// rights: the ledger creates and rewrites its shards by
		// server-side apply, a replica creates and renews the Lease.
		ctx := context.Background()
		l := tagger.NewLedger(sa, tagger.LedgerOptions{Namespace: namespace, Name: "eni-tagger-cache"})
		if err := l.Load(ctx); err != nil {
			t.Fatalf("loading the ledger as the operator: %v", err)
		}
		l.Put(tagger.Record{Pod: "shop/web", UID: "uid-1", ENI: "eni-1", Tags: map[string]string{"team": "a"}})
		for range 2 {
			if err := l.Flush(ctx); err != nil {
				t.Fatalf("writing the ledger as the operator: %v", err)
			}
			l.Put(tagger.Record{Pod: "shop/web", UID: "uid-1", ENI: "eni-1", Tags: map[string]string{"team": "b"}})
		}
		le := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease, Namespace: namespace}}
		if err := sa.Create(ctx, le); err != nil {
			t.Fatalf("creating the Lease as the operator: %v", err)
		}
		holder := "replica-1"
		le.Spec.HolderIdentity = &holder
		if err := sa.Update(ctx, le); err != nil {
			t.Fatalf("renewing the Lease as the operator: %v", err)
		}
		cm := corev1ac.ConfigMap("aws-auth", "kube-system").WithData(map[string]string{"mapRoles": "- rolearn: x"})
		if err := sa.Apply(ctx, cm, client.FieldOwner("eni-operator"), client.ForceOwnership); !apierrors.IsForbidden(err) {
			t.Errorf("writing kube-system/aws-auth as the operator: %v; want Forbidden", err)
		}
	})

	t.Run("watch-namespace", func(t *testing.T) {
		sa := c.installOperator(t, rbacKinds, "rbw", "operator.flags.watch-namespace=team-a", "operator.metrics.secure=false", "operator.flags.cache-shards=4")
		allowed := []access{
			{"patch", "", "pods", "", "team-a", "p"}, {"list", "", "pods", "", "team-a", ""}, {"watch", "", "pods", "", "team-a", ""},
			{"patch", "", "pods", "status", "team-a", "p"},
			{"create", "events.k8s.io", "events", "", "team-a", ""}, {"create", "events.k8s.io", "events", "", "default", ""},
			{"patch", "", "configmaps", "", namespace, ledger(3)},
			{"update", "coordination.k8s.io", "leases", "", namespace, lease},
			{"list", "", "nodes", "", "", ""},
		}
		refused := append(neverAllowed(namespace),
			access{"patch", "", "pods", "", "team-b", "p"}, access{"list", "", "pods", "", "", ""}, access{"watch", "", "pods", "", "", ""},
			access{"get", "", "pods", "", "kube-system", "p"}, access{"patch", "", "pods", "status", "team-b", "p"},
			access{"create", "events.k8s.io", "events", "", "team-b", ""},
			access{"patch", "", "configmaps", "", namespace, ledger(4)},
			access{"create", "authentication.k8s.io", "tokenreviews", "", "", ""})
		expectAccess(t, "the operator (watch-namespace=team-a)", sa, allowed, refused)
	})

	t.Run("config-default", func(t *testing.T) {
		objs := kustomize(t, "default")
		install(t, objs, rbacKinds...)
		sa := serviceAccount(t, "eni-operator", "eni-operator", nil)
		allowed := []access{
			{"patch", "", "pods", "", "team-b", "p"}, {"patch", "", "configmaps", "", "eni-operator", ledger(0)},
			{"update", "coordination.k8s.io", "leases", "", "eni-operator", lease},
			{"create", "authentication.k8s.io", "tokenreviews", "", "", ""},
		}
		expectAccess(t, "the operator (config/default)", sa, allowed, neverAllowed("eni-operator"))
	})
}

// The rendered objects carry the scopes the test above relies on: a
// Role per namespace, no ConfigMap or Lease rule in a ClusterRole.
func TestChartRBACShape(t *testing.T) {
	c := newChart(t)
	objs := c.renderRelease(t, "shape", "operator.flags.watch-namespace=team-a")
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			res := fmt.Sprint(r.(map[string]any)["resources"])
			for _, scoped := range []string{"configmaps", "leases", "pods", "events", "secrets"} {
				if strings.Contains(res, scoped) {
					t.Errorf("ClusterRole %s grants %s cluster-wide with watch-namespace set", o.GetName(), res)
				}
			}
		}
	}
	var namespaces []string
	for _, o := range objs {
		if o.GetKind() == "Role" {
			namespaces = append(namespaces, o.GetNamespace())
		}
	}
	if got := strings.Join(namespaces, ","); got != namespace+",team-a,default" {
		t.Errorf("Roles in %s; want %s,team-a,default", got, namespace)
	}
	if args := strings.Join(containerArgs(t, find(t, objs, "Deployment", "")), " "); !strings.Contains(args, "--watch-namespace=team-a") {
		t.Errorf("operator args %s", args)
	}
}
