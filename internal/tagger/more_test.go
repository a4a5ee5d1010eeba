package tagger_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// A tag changed or removed behind the operator's back is restored within
// one inventory interval, the inventory's page being the only read.
func TestDriftIsRepairedByTheInventory(t *testing.T) {
	h := newHarness(t, branchWorld(20))
	o := h.options()
	o.InventoryInterval = 700 * time.Millisecond
	h.startManager(o)
	for i := range 20 {
		h.pod(fmt.Sprintf("p-%d", i), h.loaded.NetworkInterfaces[i].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
	}
	for i := range 20 {
		h.waitCondition(fmt.Sprintf("p-%d", i), tagger.ReasonSynced, "")
	}
	eni0, eni1 := h.loaded.NetworkInterfaces[0].ID, h.loaded.NetworkInterfaces[1].ID
	out := h.ec2Client(nil)
	if err := out.DeleteTags(context.Background(), eni0, map[string]string{"Team": ""}); err != nil {
		t.Fatal(err)
	}
	if err := out.CreateTags(context.Background(), eni1, map[string]string{"Cost": "999"}); err != nil {
		t.Fatal(err)
	}
	h.emu.ResetCounts()
	start := time.Now()
	h.eventually("drift repaired", func() bool {
		return h.eniTags(eni0)["Team"] == "Dev" && h.eniTags(eni1)["Cost"] == "1"
	}, nil)
	t.Logf("drift repaired in %v", time.Since(start))
	time.Sleep(o.InventoryInterval) // one more interval: nothing more to do
	calls := h.calls()
	// Reads: inventory pages (one per interval) plus this test's own
	// read-backs; writes: exactly one CreateTags per drifted ENI at most.
	if calls["CreateTags"] < 1 || calls["CreateTags"] > 2 || calls["DeleteTags"] != 0 {
		t.Fatalf("drift repair cost %v", calls)
	}
}

// Shared ENIs are refused by default; with --allow-shared-eni-tagging
// they carry the merge of their pods' tags, and a disputed key is left
// alone with a Conflict condition on both pods.
func TestSharedENIs(t *testing.T) {
	h := newHarness(t, emulator.World{
		Instances: []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a", SecondaryIPCount: 3}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", IPv4Prefixes: []string{"10.0.10.0/28"},
			Instance: "", Tags: map[string]string{"Name": "prefix-eni"}}},
	})
	inst := h.loaded.Instances[0]
	nodeENI := inst.PrimaryENI
	base := h.options()
	base.InventoryInterval = time.Hour // prefix addresses are found through the inventory
	h.startManager(base)
	onNode := func(name, ip, tags string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Annotations: map[string]string{tagger.DefaultAnnotationKey: tags}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
		if err := h.k8s.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
		if err := h.k8s.Status().Update(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	onNode("a", inst.SecondaryIPs[0], "Team=Dev,App=a")
	onNode("pd", "10.0.10.5", "Team=Dev") // inside a delegated prefix
	h.waitCondition("a", tagger.ReasonSharedENI, nodeENI)
	h.waitCondition("pd", tagger.ReasonSharedENI, "")
	if c := h.calls(); c["CreateTags"] != 0 {
		t.Fatalf("shared ENI tagged by default: %v", c)
	}
	h.waitEvent("a", "Warning/SharedENI")

	o := base
	o.AllowSharedENITagging = true
	h.startManager(o)
	h.waitCondition("a", tagger.ReasonSynced, "")
	onNode("b", inst.SecondaryIPs[1], "Team=Dev,App=b,Env=prod")
	h.waitCondition("b", tagger.ReasonConflict, `"App"`)
	h.waitCondition("a", tagger.ReasonConflict, `"App"`)
	h.eventually("merged tags", func() bool { return h.eniTags(nodeENI)["Env"] == "prod" }, nil)
	got := h.eniTags(nodeENI)
	if got["Team"] != "Dev" || got["App"] != "a" { // App stays as first written: not flipped
		t.Fatalf("shared ENI tags %v", got)
	}
	time.Sleep(300 * time.Millisecond)
	h.emu.ResetCounts()
	time.Sleep(500 * time.Millisecond)
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("shared ENI thrashes: %v", c)
	}
	// Pod b goes: its own key goes, the keys pod a still wants stay.
	h.deletePod("b")
	h.eventually("b's tags removed", func() bool { _, ok := h.eniTags(nodeENI)["Env"]; return !ok }, nil)
	if got := h.eniTags(nodeENI); got["Team"] != "Dev" {
		t.Fatalf("a shared key was removed with one of its pods: %v", got)
	}
}

// hostNetwork pods are never touched; IPv6 pods are tagged.
func TestHostNetworkSkippedAndIPv6Tagged(t *testing.T) {
	h := newHarness(t, emulator.World{
		Instances:         []emulator.InstanceSpec{{Type: "m5.large", Subnet: "a"}},
		NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", IPv6Addresses: []string{"2600:1f18::42"}}},
	})
	h.startManager(h.options())
	host := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "host", Namespace: h.ns, Annotations: map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"}},
		Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
	if err := h.k8s.Create(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	host.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: h.loaded.Instances[0].PrivateIP}
	if err := h.k8s.Status().Update(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	v6 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "v6", Namespace: h.ns, Annotations: map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
	if err := h.k8s.Create(context.Background(), v6); err != nil {
		t.Fatal(err)
	}
	v6.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "2600:1f18::42", PodIPs: []corev1.PodIP{{IP: "2600:1f18::42"}}}
	if err := h.k8s.Status().Update(context.Background(), v6); err != nil {
		t.Fatal(err)
	}
	h.waitCondition("v6", tagger.ReasonSynced, h.loaded.NetworkInterfaces[0].ID)
	if h.eniTags(h.loaded.NetworkInterfaces[0].ID)["Team"] != "Dev" {
		t.Fatal("IPv6 pod's ENI not tagged")
	}
	if condition(h.get("host")) != nil || len(h.eniTags(h.loaded.Instances[0].PrimaryENI)) != 0 {
		t.Fatal("a hostNetwork pod was handled")
	}
}

// --subnet-ids, --watch-namespace and --tag-namespace.
func TestSubnetNamespaceAndPrefixOptions(t *testing.T) {
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", InterfaceType: "branch", Count: 2}, {Subnet: "b", InterfaceType: "branch"}}})
	o := h.options()
	o.SubnetIDs = []string{h.subnet}
	o.TagNamespace = tagger.NamespacingPodNamespace
	o.WatchNamespace = h.ns
	h.startManager(o)
	enis := h.loaded.NetworkInterfaces
	h.pod("in-a", enis[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.pod("in-b", enis[2].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("in-a", tagger.ReasonSynced, "")
	h.waitCondition("in-b", tagger.ReasonSubnetNotWanted, "not in --subnet-ids")
	if got := h.eniTags(enis[0].ID); got[h.ns+":Team"] != "Dev" || got["Team"] != "" {
		t.Fatalf("--tag-namespace: ENI tags %v", got)
	}
	if len(h.eniTags(enis[2].ID)) != 0 {
		t.Fatal("ENI outside --subnet-ids tagged")
	}
	// A pod in another namespace is not watched.
	other := "other-" + h.ns
	if err := h.k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: other, Annotations: map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
	if err := h.k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: enis[1].PrivateIP}
	if err := h.k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if len(h.eniTags(enis[1].ID)) != 0 {
		t.Fatal("a pod outside --watch-namespace was tagged")
	}
}

// A rate-limited pod is requeued, not dropped: its second change lands
// once the per-pod bucket refills.
func TestPodRateLimitRequeues(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	o := h.options()
	o.PodRateLimitQPS, o.PodRateLimitBurst = 0.25, 1 // one write per 4s
	h.startManager(o)
	eni := h.loaded.NetworkInterfaces[0]
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "v=1"})
	h.waitCondition("web", tagger.ReasonSynced, tagger.Hash(map[string]string{"v": "1"}))
	changed := time.Now()
	h.annotate("web", "v=2")
	h.waitCondition("web", tagger.ReasonSynced, tagger.Hash(map[string]string{"v": "2"}))
	if h.eniTags(eni.ID)["v"] != "2" {
		t.Fatal("second change lost")
	}
	waited := time.Since(changed)
	if h.labelled("eni_operator_tagger_reconciles_total", "result", "requeue") < 1 || waited < 2*time.Second {
		t.Fatalf("second change applied after %v with %v requeues; want it held back by the per-pod limit", waited,
			h.labelled("eni_operator_tagger_reconciles_total", "result", "requeue"))
	}
}

// A missing IAM permission does not stop the manager: pods report the
// AWS error, pointing at IAM, and recover once it is granted. (The
// start-up check naming the action is ec2.PermissionCheck's.)
func TestMissingPermissionIsReportedWithoutCrashing(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	denied := []string{"CreateTags"}
	if err := h.emu.Configure(emulator.Config{Denied: denied}); err != nil {
		t.Fatal(err)
	}
	h.startManager(h.options())
	eni := h.loaded.NetworkInterfaces[0]
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	c := h.waitCondition("web", tagger.ReasonAWSError, "UnauthorizedOperation")
	if !strings.Contains(c.Message, "IAM") {
		t.Fatalf("condition does not point at IAM: %s", c.Message)
	}
	if err := h.emu.Configure(emulator.Config{Denied: []string{}}); err != nil {
		t.Fatal(err)
	}
	h.waitCondition("web", tagger.ReasonSynced, "")
	if !maps.Equal(map[string]string{"Team": "Dev"}, lastApplied(h.get("web"))) {
		t.Fatal("not recorded after recovery")
	}
}

// A pod whose IP is on one of the NodeENI controller's ENIs is not
// tagged: the tagger's token would make the controller distrust, and so
// abandon, its own interface.
func TestNodeENIInterfacesAreNotTagged(t *testing.T) {
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", Tags: map[string]string{"eni-operator.io/cluster": "prod", "eni-operator.io/nodeeni": "multus"}},
		{Subnet: "a", InterfaceType: "branch"}}})
	h.startManager(h.options())
	enis := h.loaded.NetworkInterfaces
	h.pod("on-nodeeni", enis[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.pod("on-branch", enis[1].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("on-nodeeni", tagger.ReasonNodeENIInterface, "owned by the NodeENI controller")
	h.waitCondition("on-branch", tagger.ReasonSynced, "")
	if got := h.eniTags(enis[0].ID); len(got) != 2 {
		t.Fatalf("the NodeENI interface's tags changed: %v", got)
	}
}
