package attachdefs

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

var (
	subnetA = v1alpha1.ResolvedSubnet{ID: "subnet-0aaaaaaaa", Zone: "eu-west-1a", CIDR: "10.0.1.0/24"}
	subnetB = v1alpha1.ResolvedSubnet{ID: "subnet-0bbbbbbbb", Zone: "eu-west-1a", CIDR: "10.0.2.0/28", IPv6CIDR: "2600:1f14::/64"}
)

func TestDefinitionsAppearInEachNamespaceOwnedByTheNodeENI(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "appear-a", "appear-b")
	startController(t, cfg)
	ne := createNodeENI(t, c, "appear", v1alpha1.AttachmentDefinitionSpec{Name: "fast", Namespaces: []string{"appear-a", "appear-b"}}, subnetA, subnetB)

	for _, ns := range []string{"appear-a", "appear-b"} {
		for i, s := range []v1alpha1.ResolvedSubnet{subnetA, subnetB} {
			u := waitConfig(t, c, ns, "fast-"+s.ID, wantedConfig(t, c, "appear", i))
			ref := metav1.GetControllerOf(u)
			if ref == nil || ref.UID != ne.UID || ref.Kind != "NodeENI" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("%s/%s: controller reference %+v, want the NodeENI's (the garbage collector deletes it with the NodeENI)", ns, u.GetName(), ref)
			}
			if got := u.GetLabels()[LabelNodeENI]; got != "appear" {
				t.Errorf("%s/%s: label %s=%q, want the NodeENI's name", ns, u.GetName(), LabelNodeENI, got)
			}
		}
	}
	// The second subnet of the zone is on the agent's second interface.
	if cfg := configOf(definition(t, c, "appear-a", "fast-"+subnetB.ID)); !strings.Contains(cfg, `"master":"multus1"`) ||
		!strings.Contains(cfg, `"ipRanges"`) {
		t.Errorf("dual-stack definition of the zone's second subnet: %s", cfg)
	}
	cond := waitReason(t, c, "appear", ReasonSynced)
	if cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "written: 4,") {
		t.Errorf("condition %+v", cond)
	}
}

func TestAUsersEditOrDeletionIsRepaired(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "repair")
	startController(t, cfg)
	createNodeENI(t, c, "repair", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"repair"}}, subnetA)
	want := wantedConfig(t, c, "repair", 0)
	u := waitConfig(t, c, "repair", "repair", want)

	expectRepaired(t, c, u, want)

	if err := c.Delete(context.Background(), definition(t, c, "repair", "repair")); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, c, "repair", "repair", want)
}

func TestSomeoneElsesDefinitionIsLeftAloneAndReportedAsConflict(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "conflict-a", "conflict-b")
	theirs := createForeign(t, c, "conflict-a", "conflict", `{"cniVersion":"0.3.1","type":"bridge"}`)
	startController(t, cfg)
	createNodeENI(t, c, "conflict", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"conflict-a", "conflict-b"}}, subnetA)

	// The other namespace gets its definition all the same.
	waitConfig(t, c, "conflict-b", "conflict", wantedConfig(t, c, "conflict", 0))
	cond := waitReason(t, c, "conflict", ReasonConflict)
	if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "conflict-a/conflict") {
		t.Errorf("condition %+v, want False naming conflict-a/conflict", cond)
	}
	testenv.Eventually(t, "a Warning event on the NodeENI", waitFor, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Name == "conflict" && e.Type == "Warning" && e.Reason == ReasonConflict {
				return true, ""
			}
		}
		return false, "none"
	})
	// Looked at again every second: never written over.
	time.Sleep(2 * time.Second)
	if now := definition(t, c, "conflict-a", "conflict"); now.GetResourceVersion() != theirs.GetResourceVersion() {
		t.Errorf("someone else's definition was written: %v", now.Object)
	}

	// Once theirs is gone, the NodeENI's takes the name.
	if err := c.Delete(context.Background(), theirs); err != nil {
		t.Fatal(err)
	}
	waitConfig(t, c, "conflict-a", "conflict", wantedConfig(t, c, "conflict", 0))
	waitReason(t, c, "conflict", ReasonSynced)
}

func TestANamespaceLeavingTheListLosesOnlyTheNodeENIsDefinitions(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "leave-a", "leave-b")
	startController(t, cfg)
	createNodeENI(t, c, "leave", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"leave-a", "leave-b"}}, subnetA)
	want := wantedConfig(t, c, "leave", 0)
	waitConfig(t, c, "leave-b", "leave", want)
	// Someone else's definition, even one carrying the label.
	other := createForeign(t, c, "leave-b", "other", `{"cniVersion":"0.3.1","type":"bridge"}`)
	other.SetLabels(map[string]string{LabelNodeENI: "leave"})
	if err := c.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}

	testenv.UpdateNodeENISpec(t, c, "leave", func(s *v1alpha1.NodeENISpec) {
		s.Multus.AttachmentDefinition.Namespaces = []string{"leave-a"}
	})
	waitGone(t, c, "leave-b", "leave")
	if definition(t, c, "leave-a", "leave") == nil || definition(t, c, "leave-b", "other") == nil {
		t.Error("a definition still wanted, or someone else's, was deleted")
	}
}

func TestUnsettingTheAttachmentDefinitionDeletesThem(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "unset")
	startController(t, cfg)
	createNodeENI(t, c, "unset", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"unset"}}, subnetA)
	waitConfig(t, c, "unset", "unset", wantedConfig(t, c, "unset", 0))
	waitReason(t, c, "unset", ReasonSynced)

	testenv.UpdateNodeENISpec(t, c, "unset", func(s *v1alpha1.NodeENISpec) { s.Multus.AttachmentDefinition = nil })
	waitGone(t, c, "unset", "unset")
	testenv.Eventually(t, "the condition removed", waitFor, func() (bool, string) {
		cond := readyCondition(t, c, "unset")
		return cond == nil, "still there"
	})
}

func TestAMissingNamespaceIsReportedAndRetried(t *testing.T) {
	cfg, c := withMultus(t)
	startController(t, cfg)
	createNodeENI(t, c, "later", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"later"}}, subnetA)
	cond := waitReason(t, c, "later", ReasonNamespaceNotFound)
	if !strings.Contains(cond.Message, "later") {
		t.Errorf("message %q does not name the namespace", cond.Message)
	}
	testenv.CreateNamespaces(t, c, "later")
	waitConfig(t, c, "later", "later", wantedConfig(t, c, "later", 0))
	waitReason(t, c, "later", ReasonSynced)
}

func TestNoSubnetsYet(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "nosubnets")
	startController(t, cfg)
	createNodeENI(t, c, "nosubnets", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"nosubnets"}})
	waitReason(t, c, "nosubnets", ReasonNoSubnets)
	setSubnets(t, c, "nosubnets", subnetA)
	waitConfig(t, c, "nosubnets", "nosubnets", wantedConfig(t, c, "nosubnets", 0))
}

// Multus installed after the operator: reported, nothing crashes, and the
// definitions come (and are kept) once the CRD is there.
func TestWithoutTheCRDThenWithIt(t *testing.T) {
	cp := testenv.StartControlPlane(t) // the project's CRDs only
	cfg := cp.Admin()
	c := testenv.Client(t, cfg)
	testenv.CreateNamespaces(t, c, "multus")
	m := startController(t, cfg)
	createNodeENI(t, c, "late", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"multus"}}, subnetA)
	cond := waitReason(t, c, "late", ReasonCRDNotInstalled)
	if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "install Multus") {
		t.Errorf("condition %+v", cond)
	}

	installNADCRD(t, cfg)
	want := wantedConfig(t, c, "late", 0)
	u := waitConfig(t, c, "multus", "late", want)
	waitReason(t, c, "late", ReasonSynced)
	// The watch started late works: an edit is repaired.
	expectRepaired(t, c, u, want)
	if err := m.Stop(); err != nil {
		t.Errorf("the manager ended with %v", err)
	}
}

// The other controllers' conditions in the same list are kept: the
// controller changes only its own.
func TestOnlyItsOwnConditionIsWritten(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "others")
	createNodeENI(t, c, "others", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"others"}}, subnetA)
	ne := testenv.GetNodeENI(t, c, "others")
	patch := client.MergeFrom(ne.DeepCopy())
	theirs := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", Message: "creating",
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	ne.Status.Conditions = []metav1.Condition{theirs}
	if err := c.Status().Patch(context.Background(), ne, patch); err != nil {
		t.Fatal(err)
	}
	startController(t, cfg)
	waitReason(t, c, "others", ReasonSynced)
	conds := testenv.GetNodeENI(t, c, "others").Status.Conditions
	if len(conds) != 2 || !reflect.DeepEqual(conds[0], theirs) {
		t.Errorf("conditions %+v; want Ready as it was, then AttachmentDefinitionsReady", conds)
	}
}

// The role generated from the RBAC markers (config/rbac/role.yaml) is
// enough to write, repair and delete definitions and report.
func TestGeneratedRoleIsEnough(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "rbac")
	as := testenv.AsRole(t, cfg, "config/rbac/role.yaml", "attachdefs-rbac-test",
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "attachdefs-rbac-test-user"})
	startController(t, as)
	createNodeENI(t, c, "rbac", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"rbac"}}, subnetA)
	want := wantedConfig(t, c, "rbac", 0)
	u := waitConfig(t, c, "rbac", "rbac", want)
	waitReason(t, c, "rbac", ReasonSynced)
	expectRepaired(t, c, u, want)
	testenv.UpdateNodeENISpec(t, c, "rbac", func(s *v1alpha1.NodeENISpec) { s.Multus.AttachmentDefinition = nil })
	waitGone(t, c, "rbac", "rbac")
}

// A NodeENI asking for a pods' range waits for it, saying so; once the
// reservation is in its status, the definition hands out its addresses
// alone. Without one, the condition warns that the whole subnet is
// handed out.
func TestDefinitionsWaitForThePodsRange(t *testing.T) {
	cfg, c := withMultus(t)
	testenv.CreateNamespaces(t, c, "ranged")
	startController(t, cfg)
	ne := createNodeENI(t, c, "ranged", v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"ranged"}}, subnetA)
	cond := waitReason(t, c, "ranged", ReasonSynced)
	if !strings.Contains(cond.Message, "set multus.podAddressReservation") {
		t.Errorf("no word of the whole subnet: %+v", cond)
	}
	testenv.UpdateNodeENISpec(t, c, ne.Name, func(s *v1alpha1.NodeENISpec) {
		s.Multus.PodAddressReservation = &v1alpha1.PodAddressReservationSpec{PrefixLength: 28}
	})
	waitReason(t, c, "ranged", ReasonPodRangePending)
	got := testenv.GetNodeENI(t, c, ne.Name)
	patch := client.MergeFrom(got.DeepCopy())
	got.Status.PodAddressReservations = []v1alpha1.PodAddressReservationStatus{{SubnetID: subnetA.ID, ID: "scr-1", CIDR: "10.0.1.224/28"}}
	if err := c.Status().Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	u := waitConfig(t, c, "ranged", "ranged", wantedConfig(t, c, "ranged", 0))
	if cfg, _, _ := unstructured.NestedString(u.Object, "spec", "config"); !strings.Contains(cfg, `"range_start":"10.0.1.224","range_end":"10.0.1.239"`) {
		t.Errorf("config %s, want the reserved range", cfg)
	}
	if cond := waitReason(t, c, "ranged", ReasonSynced); strings.Contains(cond.Message, "podAddressReservation") {
		t.Errorf("a warning with the range reserved: %+v", cond)
	}
}
