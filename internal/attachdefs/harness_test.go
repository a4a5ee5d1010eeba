package attachdefs

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

const waitFor = 20 * time.Second

// withMultus is the package's control plane with the
// NetworkAttachmentDefinition CRD installed (again: installing is
// idempotent) and a direct client of it.
func withMultus(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	env := shared.Env(t)
	installNADCRD(t, env.Config)
	return env.Config, testenv.Client(t, env.Config)
}

func installNADCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
}

// startController runs the controller in a manager of its own, looking
// again every second rather than every minute.
func startController(t *testing.T, cfg *rest.Config) *testenv.Manager {
	t.Helper()
	return testenv.StartManager(t, cfg, ctrl.Options{}, func(mgr ctrl.Manager, _ *prometheus.Registry) error {
		return Setup(mgr, Options{RecheckInterval: time.Second, SkipNameValidation: true})
	})
}

// createNodeENI creates a NodeENI asking for definitions in namespaces
// and gives it subnets as the NodeENI controller resolves them.
func createNodeENI(t *testing.T, c client.Client, name string, ad v1alpha1.AttachmentDefinitionSpec, subnets ...v1alpha1.ResolvedSubnet) *v1alpha1.NodeENI {
	t.Helper()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"role": name}, SubnetIDs: []string{"subnet-0aaaaaaaa"}, SecurityGroupNames: []string{"multus"}, InterfaceName: "multus",
		Multus: &v1alpha1.MultusSpec{AttachmentDefinition: &ad}}}
	if err := c.Create(context.Background(), ne); err != nil {
		t.Fatal(err)
	}
	if len(subnets) > 0 {
		setSubnets(t, c, name, subnets...)
	}
	return ne
}

func setSubnets(t *testing.T, c client.Client, name string, subnets ...v1alpha1.ResolvedSubnet) {
	t.Helper()
	ne := testenv.GetNodeENI(t, c, name)
	patch := client.MergeFrom(ne.DeepCopy())
	ne.Status.Subnets = subnets
	if err := c.Status().Patch(context.Background(), ne, patch); err != nil {
		t.Fatal(err)
	}
}

// definition reads a NetworkAttachmentDefinition; nil when there is none.
func definition(t *testing.T, c client.Client, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := newObject()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return u
}

// createForeign creates a definition someone else wrote.
func createForeign(t *testing.T, c client.Client, namespace, name, config string) *unstructured.Unstructured {
	t.Helper()
	u := newObject()
	u.SetNamespace(namespace)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, config, "spec", "config")
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// readyCondition is the NodeENI's AttachmentDefinitionsReady condition,
// nil when it has none.
func readyCondition(t *testing.T, c client.Client, name string) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(testenv.GetNodeENI(t, c, name).Status.Conditions, v1alpha1.ConditionAttachmentDefinitionsReady)
}

// waitReason waits for the condition's reason.
func waitReason(t *testing.T, c client.Client, name, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	testenv.Eventually(t, "condition "+reason, waitFor, func() (bool, string) {
		cond = readyCondition(t, c, name)
		return cond != nil && cond.Reason == reason, fmt.Sprintf("%+v", cond)
	})
	return cond
}

// waitConfig waits for the definition to exist with config.
func waitConfig(t *testing.T, c client.Client, namespace, name, config string) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testenv.Eventually(t, "definition "+namespace+"/"+name, waitFor, func() (bool, string) {
		u = definition(t, c, namespace, name)
		if u == nil {
			return false, "none"
		}
		return configOf(u) == config, configOf(u)
	})
	return u
}

// waitGone waits for the definition to be deleted.
func waitGone(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	testenv.Eventually(t, "definition "+namespace+"/"+name+" deleted", waitFor, func() (bool, string) {
		return definition(t, c, namespace, name) == nil, "still there"
	})
}

// wantedConfig is the configuration the decision gives ne's definition
// for subnet i.
func wantedConfig(t *testing.T, c client.Client, name string, i int) string {
	t.Helper()
	defs, err := Wanted(testenv.GetNodeENI(t, c, name))
	if err != nil || len(defs) <= i {
		t.Fatalf("wanted definitions %v, %v", defs, err)
	}
	return defs[i].Config
}

// expectRepaired edits the definition's configuration as a user would
// and waits for the controller to write want back.
func expectRepaired(t *testing.T, c client.Client, u *unstructured.Unstructured, want string) {
	t.Helper()
	_ = unstructured.SetNestedField(u.Object, `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0"}`, "spec", "config")
	if err := c.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, c, u.GetNamespace(), u.GetName(), want)
}
