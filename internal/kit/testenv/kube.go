package testenv

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// Scheme knows the built-in kinds and the project's.
func Scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Client is a direct (uncached) client of cfg's API server with Scheme,
// its rate limit raised so a test's own writes never queue behind it.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 1000, 2000
	c, err := client.New(fast, client.Options{Scheme: Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CreateNamespaces creates namespaces.
func CreateNamespaces(t testing.TB, c client.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
}

// Node is the Node of an EC2 instance in a zone, with labels besides the
// zone's.
type Node struct {
	Name, Instance, Zone string
	Labels               map[string]string
}

// CreateNode creates node, labelled with its zone and labels.
func CreateNode(t testing.TB, c client.Client, node Node) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: map[string]string{corev1.LabelTopologyZone: node.Zone}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", node.Zone, node.Instance)}}
	for k, v := range node.Labels {
		n.Labels[k] = v
	}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// CreatePod creates p and, when status has a phase, gives it that status
// as the kubelet would. A patch, not an update: the operator may have
// written the pod since it was created (a condition, a finalizer). Errors
// are reported with t.Error, so pods can be created from goroutines; it
// says whether the pod was made.
func CreatePod(t testing.TB, c client.Client, p *corev1.Pod, status corev1.PodStatus) bool {
	t.Helper()
	if err := c.Create(context.Background(), p); err != nil {
		t.Error(err)
		return false
	}
	if status.Phase == "" {
		return true
	}
	unset := p.DeepCopy()
	p.Status = status
	if err := c.Status().Patch(context.Background(), p, client.StrategicMergeFrom(unset)); err != nil {
		t.Error(err)
		return false
	}
	return true
}

// Running is the status of a running pod with ip.
func Running(ip string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
}

// GetNodeENI returns a NodeENI, or nil when there is none.
func GetNodeENI(t testing.TB, c client.Client, name string) *v1alpha1.NodeENI {
	t.Helper()
	ne := &v1alpha1.NodeENI{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return ne
}

// Attachments are a NodeENI's entries in the ENINodes, by node, device
// index and ENI.
func Attachments(t testing.TB, c client.Client, nodeENI string) []v1alpha1.ENIAttachment {
	t.Helper()
	list := &v1alpha1.ENINodeList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.ENIAttachment
	for _, en := range list.Items {
		for _, a := range en.Spec.Attachments {
			if a.NodeENI == nodeENI {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.ENIAttachment) int {
		return cmp.Or(strings.Compare(a.NodeID, b.NodeID), cmp.Compare(a.DeviceIndex, b.DeviceIndex), strings.Compare(a.ENIID, b.ENIID))
	})
	return out
}

// UpdateNodeENISpec changes a NodeENI's spec, retrying on conflicts.
func UpdateNodeENISpec(t testing.TB, c client.Client, name string, f func(*v1alpha1.NodeENISpec)) {
	t.Helper()
	for i := 0; ; i++ {
		ne := GetNodeENI(t, c, name)
		if ne == nil {
			t.Fatalf("NodeENI %s not found", name)
		}
		f(&ne.Spec)
		err := c.Update(context.Background(), ne)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			t.Fatal(err)
		}
	}
}

// CreateNodeENI creates a NodeENI named name that puts an ENI of the
// named subnets, in security group "multus" of the default world, at
// device index 1 on the nodes labelled role=role.
func CreateNodeENI(t testing.TB, c client.Client, name, role string, subnets ...string) *v1alpha1.NodeENI {
	t.Helper()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"role": role}, SubnetNames: subnets, SecurityGroupNames: []string{"multus"}, DeviceIndex: 1}}
	if err := c.Create(context.Background(), ne); err != nil {
		t.Fatal(err)
	}
	return ne
}

// K8sENITaggerCacheEntry is a value of k8s-eni-tagger's cache ConfigMap
// as it writes it (keyed by pod IP): the ENI as it was looked up, before
// the pod's tags, and the pod's UID.
func K8sENITaggerCacheEntry(eni string, before map[string]string, uid string) string {
	raw, _ := json.Marshal(map[string]any{
		"info":    map[string]any{"ID": eni, "SubnetID": "subnet-0", "InterfaceType": "branch", "IsShared": false, "Description": "", "Tags": before},
		"pod_uid": uid,
	})
	return string(raw)
}

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

// Table reads path (e.g. /apis/networking.k8s.aws/v1alpha1/nodeenis)
// from the API server as a server-side Table, the form kubectl get shows,
// so printer columns are checked as the API server computes them.
func Table(t testing.TB, cfg *rest.Config, path string) metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as a Table: HTTP %d: %s", path, resp.StatusCode, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	return table
}
