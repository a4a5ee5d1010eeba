package tagger_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// Invalid annotations are refused with the exact problem, a Warning
// event and no AWS call at all.
func TestInvalidAnnotationsAreRefusedWithoutAWSCalls(t *testing.T) {
	h := newHarness(t, branchWorld(12))
	o := h.options()
	o.DenyKeys = []string{"Secret*"}
	h.startManager(o)
	cases := []struct{ annotation, message string }{
		{`{"Team":"Dev"`, "malformed JSON"},
		{`{"Cost":1}`, `the value of key "Cost" must be a JSON string, got a number`},
		{`=Dev`, "has an empty key"},
		{`{"":"x"}`, "the key is empty"},
		{`{"Team ":"Dev"}`, "the key ends with white space (U+0020)"},
		{`{"Team":"a\u0000eni-operator.io/cluster\u0000x"}`, "the value holds U+0000"},
		{`Team=Dev,Team=Ops`, `duplicate key "Team"`},
		{`{"a":"1","a":"2"}`, `duplicate key "a"`},
		{manyTags(50), "50 tags asked for"},
		{strings.Repeat("k", 128) + "=v", "key is 128 characters, the limit is 127"},
		{"k=" + strings.Repeat("v", 257), "value is 257 characters, the limit is 256"},
		{"AWS:Owner=me", "reserved"},
		{"Kubernetes.io/Cluster/x=owned", "reserved"},
		{"EKS:x=1", "reserved"},
		{"eni-tagger.io/hash=x", "reserved"},
		{"SecretKey=x", "not allowed by the operator's tag policy"},
	}
	for i, c := range cases {
		h.pod(fmt.Sprintf("bad-%d", i), h.loaded.NetworkInterfaces[i%12].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: c.annotation})
	}
	for i, c := range cases {
		name := fmt.Sprintf("bad-%d", i)
		cond := h.waitCondition(name, tagger.ReasonInvalidTags, c.message)
		if cond.Status != corev1.ConditionFalse {
			t.Errorf("%s: condition status %s", name, cond.Status)
		}
		h.waitEvent(name, "Warning/InvalidTags")
	}
	if n := h.total(); n != 0 {
		t.Fatalf("invalid annotations cost %d EC2 calls: %v", n, h.calls())
	}
}

func manyTags(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d=v", i)
	}
	return strings.Join(parts, ",")
}

// The 50-tag limit counts the tags already on the ENI; nothing is written.
func TestTagLimitCountsExistingTags(t *testing.T) {
	existing := map[string]string{}
	for i := range 47 {
		existing[fmt.Sprintf("other-%d", i)] = "x"
	}
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Tags: existing}}})
	h.startManager(h.options())
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "a=1,b=2,c=3"})
	h.waitCondition("web", tagger.ReasonInvalidTags, "would carry 51 tags")
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("wrote tags: %v", c)
	}
}

// Removing or emptying the annotation removes exactly the operator's
// tags; tags others set on the ENI stay.
func TestRemovingTheAnnotationRemovesOnlyOurTags(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	h.startManager(h.options())
	for i, empty := range []bool{false, true} {
		name, eni := fmt.Sprintf("web-%d", i), h.loaded.NetworkInterfaces[i]
		h.pod(name, eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,Cost=1"})
		h.waitCondition(name, tagger.ReasonSynced, "")
		if err := h.ec2Client(nil).CreateTags(context.Background(), eni.ID, map[string]string{"Owner": "ops"}); err != nil {
			t.Fatal(err)
		}
		h.emu.ResetCounts()
		if empty {
			h.annotate(name, " ") // blank: asks for no tags
		} else {
			h.annotate(name, "")
		}
		h.waitCondition(name, tagger.ReasonRemoved, "")
		if c := h.calls(); c["DeleteTags"] != 1 || c["CreateTags"] != 0 {
			t.Fatalf("%s: calls %v, want one DeleteTags", name, c)
		}
		want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni", "Owner": "ops"}
		if got := h.eniTags(eni.ID); !maps.Equal(got, want) {
			t.Fatalf("%s: ENI tags %v, want %v", name, got, want)
		}
		if p := h.get(name); p.Annotations[tagger.LastAppliedTagsAnnotation] != "" {
			t.Fatalf("%s: last-applied annotation left: %v", name, p.Annotations)
		}
	}
}

func (h *harness) deletePod(name string) {
	h.t.Helper()
	p := &corev1.Pod{}
	p.Namespace, p.Name = h.ns, name
	if err := h.k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) gone(name string) bool {
	var p corev1.Pod
	return apierrors.IsNotFound(h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &p))
}

// By default no finalizer: a pod deleted while the operator is down is
// gone at once, and the restarted operator removes its tags (from the
// ledger), by value, leaving others' tags.
func TestPodDeletedWhileOperatorDownIsCleanedUpAfterRestart(t *testing.T) {
	h, eni := syncedWebPod(t, "Team=Dev,Cost=1")
	if len(h.get("web").Finalizers) != 0 {
		t.Fatal("a finalizer was added without --pod-finalizer")
	}
	h.eventually("ledger written", func() bool { return h.ledgerEntries() == 1 }, nil)
	h.stopManager()
	// Someone else takes over one of the keys meanwhile: it stays.
	if err := h.ec2Client(nil).CreateTags(context.Background(), eni.ID, map[string]string{"Cost": "2"}); err != nil {
		t.Fatal(err)
	}
	h.deletePod("web")
	if !h.gone("web") {
		t.Fatal("pod deletion blocked while the operator is down")
	}
	h.startManager(h.options())
	h.eventually("tags removed", func() bool { _, ok := h.eniTags(eni.ID)["Team"]; return !ok }, nil)
	want := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni", "Cost": "2"}
	if got := h.eniTags(eni.ID); !maps.Equal(got, want) {
		t.Fatalf("ENI tags %v, want %v", got, want)
	}
	h.eventually("ledger entry dropped", func() bool { return h.ledgerEntries() == 0 }, nil)
}

// With the manager running, deletion removes the tags too (no finalizer).
func TestPodDeletionRemovesTags(t *testing.T) {
	h, eni := syncedWebPod(t, "Team=Dev")
	h.emu.ResetCounts()
	h.deletePod("web")
	h.eventually("tags removed", func() bool { _, ok := h.eniTags(eni.ID)["Team"]; return !ok }, nil)
	if h.eniTags(eni.ID)[tagger.HashTag] != "" {
		t.Fatal("hash tag left behind")
	}
}

// --pod-finalizer: tags go before the pod object does; the uninstall
// path removes the finalizers.
func TestFinalizerMode(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	o := h.options()
	o.PodFinalizer = true
	h.startManager(o)
	for i := range 2 {
		h.pod(fmt.Sprintf("web-%d", i), h.loaded.NetworkInterfaces[i].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
		h.waitCondition(fmt.Sprintf("web-%d", i), tagger.ReasonSynced, "")
	}
	if fs := h.get("web-0").Finalizers; len(fs) != 1 || fs[0] != tagger.Finalizer {
		t.Fatalf("finalizers %v", fs)
	}
	h.deletePod("web-0")
	h.eventually("pod gone", func() bool { return h.gone("web-0") }, nil)
	if _, ok := h.eniTags(h.loaded.NetworkInterfaces[0].ID)["Team"]; ok {
		t.Fatal("the pod went before its tags")
	}
	// Uninstall: operator stopped, finalizers removed, deletion not blocked.
	h.stopManager()
	n, err := tagger.RemoveFinalizers(context.Background(), h.k8s)
	if err != nil || n != 1 {
		t.Fatalf("RemoveFinalizers = %d, %v", n, err)
	}
	h.deletePod("web-1")
	h.eventually("pod gone", func() bool { return h.gone("web-1") }, nil)
}

// ledgerEntries counts records in the ledger ConfigMaps.
func (h *harness) ledgerEntries() int {
	var list corev1.ConfigMapList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.opsNS)); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "eni-tagger-cache-") {
			n += len(cm.Data)
		}
	}
	return n
}

// Dry run writes nothing that changes a later real run.
func TestDryRunThenRealRun(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	o := h.options()
	o.DryRun = true
	h.startManager(o)
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev"})
	h.waitCondition("web", tagger.ReasonDryRun, `would set Team="Dev"`)
	h.waitEvent("web", "Normal/DryRun")
	time.Sleep(300 * time.Millisecond)
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("dry run wrote: %v", c)
	}
	if p := h.get("web"); p.Annotations[tagger.LastAppliedTagsAnnotation] != "" || h.ledgerEntries() != 0 {
		t.Fatal("dry run recorded applied tags")
	}
	o.DryRun = false
	h.startManager(o)
	h.waitCondition("web", tagger.ReasonSynced, "")
	if h.eniTags(eni.ID)["Team"] != "Dev" {
		t.Fatal("the real run did not apply the tags")
	}
}

// Pods and ENIs tagged by k8s-eni-tagger are adopted as they are: no
// conflict, no write.
func TestAdoptsK8sENITaggerBookkeeping(t *testing.T) {
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch",
		Tags: map[string]string{"Team": "Dev", tagger.HashTag: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}})
	h.startManager(h.options())
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{
		tagger.DefaultAnnotationKey:      "Team=Dev",
		tagger.LastAppliedTagsAnnotation: `{"Team":"Dev"}`,
		tagger.LastAppliedHashAnnotation: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	})
	h.waitCondition("web", tagger.ReasonSynced, "")
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("adoption wrote: %v", c)
	}
}

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

// hostNetwork pods are never tagged (told why); IPv6 pods are tagged.
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
	h.waitCondition("host", tagger.ReasonHostNetwork, "")
	if len(h.eniTags(h.loaded.Instances[0].PrimaryENI)) != 0 {
		t.Fatal("a hostNetwork pod's ENI (its node's) was tagged")
	}
}

// --subnet-ids, --watch-namespace and --tag-namespace.
func TestSubnetNamespaceAndPrefixOptions(t *testing.T) {
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "a", InterfaceType: "branch", Count: 2}, {Subnet: "b", InterfaceType: "branch"}}})
	o := h.options()
	o.SubnetIDs = []string{h.ec2.Subnets["a"]}
	o.TagNamespace = tagplan.NamespacingPodNamespace
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
	h.waitCondition("web", tagger.ReasonSynced, tagplan.Hash(map[string]string{"v": "1"}))
	changed := time.Now()
	h.annotate("web", "v=2")
	h.waitCondition("web", tagger.ReasonSynced, tagplan.Hash(map[string]string{"v": "2"}))
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

// syncedWebPod starts the tagger over one branch ENI and waits until the
// pod web on it, annotated with tags, is synced.
func syncedWebPod(t *testing.T, tags string) (*harness, emulator.LoadedENI) {
	t.Helper()
	h := newHarness(t, branchWorld(1))
	eni := h.loaded.NetworkInterfaces[0]
	h.startManager(h.options())
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: tags})
	h.waitCondition("web", tagger.ReasonSynced, "")
	return h, eni
}

func branchWorld(n int) emulator.World {
	return emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: n,
		Tags: map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}}}}
}

func withHash(t map[string]string, desired map[string]string) map[string]string {
	out := maps.Clone(t)
	out[tagger.HashTag] = tagplan.Hash(desired)
	return out
}

// TestEightScenarios walks one pod through the eight scenarios of the
// original design, with exact AWS call counts and the ENI's tags read back.
func TestEightScenarios(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	eni, ip := h.loaded.NetworkInterfaces[0].ID, h.loaded.NetworkInterfaces[0].PrivateIP
	base := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	h.startManager(h.options())

	// The message quotes the hash on the ENI: that of the desired tags,
	// except after a key removal (token, the earlier set's).
	step := func(name string, annotation, wantReason string, desired map[string]string, wantCalls map[string]int, token ...map[string]string) {
		t.Helper()
		h.emu.ResetCounts()
		h.annotate("web", annotation)
		msg := ""
		if desired != nil {
			onENI := desired
			if len(token) > 0 {
				onENI = token[0]
			}
			msg = fmt.Sprintf("%d tags in sync on ENI %s (hash %s)", len(desired), eni, tagplan.Hash(onENI))
		}
		h.waitCondition("web", wantReason, msg)
		time.Sleep(150 * time.Millisecond) // let any stray second reconcile show in the counters
		if got := h.calls(); !maps.Equal(got, wantCalls) {
			t.Fatalf("%s: EC2 calls %v, want %v", name, got, wantCalls)
		}
	}

	// 1. No annotation: no reconcile, no AWS call.
	h.pod("web", ip, nil)
	h.eventually("pod in the manager's cache", func() bool { return true }, nil)
	time.Sleep(500 * time.Millisecond)
	if n := h.reconciles(); n != 0 {
		t.Fatalf("scenario 1: %v reconciles of an unannotated pod", n)
	}
	if n := h.total(); n != 0 {
		t.Fatalf("scenario 1: %d EC2 calls", n)
	}

	// 2. First annotation: one lookup, one CreateTags with every tag + hash.
	v1 := map[string]string{"Team": "Dev", "Cost": "1"}
	step("first annotation", "Team=Dev,Cost=1", tagger.ReasonSynced, v1,
		map[string]int{"DescribeNetworkInterfaces": 1, "CreateTags": 1})
	if got, want := h.eniTags(eni), withHash(merge(base, v1), v1); !maps.Equal(got, want) {
		t.Fatalf("scenario 2: ENI tags %v, want %v", got, want)
	}
	p := h.get("web")
	if !maps.Equal(lastApplied(p), v1) || p.Annotations[tagger.LastAppliedHashAnnotation] != tagplan.Hash(v1) {
		t.Fatalf("scenario 2: last-applied annotations %v", p.Annotations)
	}
	c := condition(p)
	if c.Status != corev1.ConditionTrue || c.ObservedGeneration != p.Generation || !strings.Contains(c.Message, eni) {
		t.Fatalf("scenario 2: condition %+v", c)
	}
	// A pod's first tagging is told by its condition, not by an event.
	if ev := h.events("web"); len(ev) != 0 {
		t.Fatalf("scenario 2: events %v, want none for a first tagging", ev)
	}
	// The cache holds trimmed pods; nothing trimmed is lost on the server.
	if len(p.Status.Conditions) != 2 || p.Status.Conditions[0].Type != corev1.PodReady || p.Labels["app"] != "web" || len(p.Spec.Containers) != 1 {
		t.Fatalf("scenario 2: the operator's writes lost what its cache does not hold: labels %v, conditions %+v", p.Labels, p.Status.Conditions)
	}

	// 3. Value changed: one CreateTags with that key and the hash only.
	v2 := map[string]string{"Team": "Ops", "Cost": "1"}
	step("value changed", `{"Team":"Ops","Cost":"1"}`, tagger.ReasonSynced, v2, map[string]int{"CreateTags": 1})
	if got, want := h.eniTags(eni), withHash(merge(base, v2), v2); !maps.Equal(got, want) {
		t.Fatalf("scenario 3: ENI tags %v, want %v", got, want)
	}
	assertLastCall(t, h, "CreateTags", []string{"Team=Ops", tagger.HashTag + "=" + tagplan.Hash(v2)})
	h.waitEvent("web", "Normal/Synced") // tags a running pod had, changed

	// 4. Key added: one CreateTags with the new key and the hash only.
	v3 := map[string]string{"Team": "Ops", "Cost": "1", "App": "web"}
	step("key added", "Team=Ops,Cost=1,App=web", tagger.ReasonSynced, v3, map[string]int{"CreateTags": 1})
	assertLastCall(t, h, "CreateTags", []string{"App=web", tagger.HashTag + "=" + tagplan.Hash(v3)})

	// 5. Key removed: one DeleteTags of that key, nothing else.
	v4 := map[string]string{"Team": "Ops", "App": "web"}
	step("key removed", "Team=Ops,App=web", tagger.ReasonSynced, v4, map[string]int{"DeleteTags": 1}, v3)
	assertLastCall(t, h, "DeleteTags", []string{"Cost=1"})
	if got, want := h.eniTags(eni), withHash(merge(base, v4), v3); !maps.Equal(got, want) {
		t.Fatalf("scenario 5: ENI tags %v, want %v (the ownership token is not rewritten)", got, want)
	}

	// 6. Unchanged tags (the same set written differently): no AWS call,
	// no status write.
	rv := h.get("web").ResourceVersion
	before := h.reconciles()
	h.emu.ResetCounts()
	h.annotate("web", `{"App":"web","Team":"Ops"}`)
	h.eventually("a reconcile", func() bool { return h.reconciles() > before }, nil)
	time.Sleep(200 * time.Millisecond)
	if n := h.total(); n != 0 {
		t.Fatalf("scenario 6: %d EC2 calls", n)
	}
	if p := h.get("web"); p.ResourceVersion == rv || condition(p).Reason != tagger.ReasonSynced {
		t.Fatal("scenario 6: annotation patch not seen")
	} else if rv2 := p.ResourceVersion; func() bool { time.Sleep(200 * time.Millisecond); return h.get("web").ResourceVersion != rv2 }() {
		t.Fatal("scenario 6: the operator wrote to the pod although nothing changed")
	}

	// 7. Mixed: one CreateTags and one DeleteTags — and no false conflict
	// after scenario 5 left the old token on the ENI.
	v5 := map[string]string{"Team": "Ops", "Env": "prod"}
	step("mixed", "Team=Ops,Env=prod", tagger.ReasonSynced, v5, map[string]int{"CreateTags": 1, "DeleteTags": 1})
	if got, want := h.eniTags(eni), withHash(merge(base, v5), v5); !maps.Equal(got, want) {
		t.Fatalf("scenario 7: ENI tags %v, want %v", got, want)
	}

	// 8. Hash conflict: another owner's token on the ENI → no write,
	// Conflict condition and a Warning event.
	h.emu.ResetCounts()
	if err := h.ec2Client(nil).CreateTags(t.Context(), eni, map[string]string{tagger.HashTag: "0000000000000000"}); err != nil {
		t.Fatal(err)
	}
	h.stopManager() // forget the ENI state it knows, so it reads the new token
	h.emu.ResetCounts()
	h.startManager(h.options())
	h.annotate("web", "Team=Ops,Env=staging")
	h.waitCondition("web", tagger.ReasonConflict, `"0000000000000000"`)
	h.waitEvent("web", "Warning/Conflict")
	if got := h.calls(); got["CreateTags"]+got["DeleteTags"] != 0 {
		t.Fatalf("scenario 8: wrote despite the conflict: %v", got)
	}
	if h.eniTags(eni)["Env"] != "prod" {
		t.Fatal("scenario 8: the ENI changed")
	}

	// ... unless --allow-shared-eni-tagging.
	o := h.options()
	o.AllowSharedENITagging = true
	h.startManager(o)
	h.annotate("web", "Team=Ops,Env=qa")
	// The new manager's first reconcile may conclude the earlier edit
	// first: wait for this one's.
	h.waitCondition("web", tagger.ReasonSynced, tagplan.Hash(map[string]string{"Team": "Ops", "Env": "qa"}))
	if h.eniTags(eni)["Env"] != "qa" {
		t.Fatal("scenario 8: --allow-shared-eni-tagging did not write")
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// assertLastCall checks the tags of the last call of action: exactly
// want, as Key=Value strings.
func assertLastCall(t *testing.T, h *harness, action string, want []string) {
	t.Helper()
	var last *emulator.Call
	for _, c := range h.emu.Calls() {
		if c.Action == action {
			c := c
			last = &c
		}
	}
	if last == nil {
		t.Fatalf("no %s call", action)
	}
	got := map[string]bool{}
	for k, v := range last.Params {
		if strings.HasPrefix(k, "Tag.") && strings.HasSuffix(k, ".Key") {
			val := last.Params[strings.TrimSuffix(k, ".Key")+".Value"]
			s := v[0]
			if len(val) > 0 {
				s += "=" + val[0]
			}
			got[s] = true
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s carried %v, want %v", action, got, want)
	}
	for _, w := range want {
		if !got[w] {
			t.Fatalf("%s carried %v, want %v", action, got, want)
		}
	}
}
