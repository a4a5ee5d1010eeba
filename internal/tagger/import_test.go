package tagger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

func union(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// importWorld has five branch ENIs, tagged as k8s-eni-tagger left them:
// 0 for a pod deleted during the switch, 1 for a pod still running, 2 a
// NodeENI interface, 3 an ENI whose tags someone changed since and 4 for
// a pod deleted after the operator started.
func importWorld() (emulator.World, map[string]string, map[string]string) {
	base := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	pod := map[string]string{"Team": "Dev", "shop:Cost": "42"}
	spec := func(tags map[string]string) emulator.NetworkInterfaceSpec {
		return emulator.NetworkInterfaceSpec{Subnet: "a", InterfaceType: "branch", Count: 1, Tags: tags}
	}
	w := emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		spec(union(base, pod, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(pod)})),
		spec(union(base, pod, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(pod)})),
		spec(union(base, pod, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(pod), "eni-operator.io/cluster": "prod"})),
		spec(union(base, pod, map[string]string{"Team": "Ops", tagger.HashTag: tagger.K8sENITaggerHash(pod)})),
		spec(union(base, pod, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(pod)})),
	}}
	return w, base, pod
}

// k8s-eni-tagger's cache ConfigMap is imported at the first start: the
// tags of a pod deleted during the switch, recorded only there, are
// removed from its ENI; the running pod's, a NodeENI interface's and
// tags changed since are left alone; crafted entries are refused; the
// import is marked on ledger shard 00 and not repeated after a restart;
// the original's ConfigMap is left as it was.
func TestOriginalCacheImport(t *testing.T) {
	for _, inventory := range []bool{false, true} {
		t.Run(fmt.Sprintf("inventory=%v", inventory), func(t *testing.T) { testOriginalCacheImport(t, inventory) })
	}
}

func testOriginalCacheImport(t *testing.T, inventory bool) {
	world, base, podTags := importWorld()
	h := newHarness(t, world)
	enis := h.loaded.NetworkInterfaces
	ctx := context.Background()
	running := h.pod("running", enis[1].PrivateIP, nil)
	lastApplied, _ := json.Marshal(podTags)
	leaving := h.pod("leaving", enis[4].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Dev,shop:Cost=42",
		tagger.LastAppliedTagsAnnotation: string(lastApplied), tagger.LastAppliedHashAnnotation: tagger.K8sENITaggerHash(podTags)})
	data := map[string]string{
		enis[0].PrivateIP: testenv.K8sENITaggerCacheEntry(enis[0].ID, base, string(uuid.NewUUID())),
		enis[1].PrivateIP: testenv.K8sENITaggerCacheEntry(enis[1].ID, base, string(running.UID)),
		enis[2].PrivateIP: testenv.K8sENITaggerCacheEntry(enis[2].ID, base, string(uuid.NewUUID())),
		enis[3].PrivateIP: testenv.K8sENITaggerCacheEntry(enis[3].ID, base, string(uuid.NewUUID())),
		enis[4].PrivateIP: testenv.K8sENITaggerCacheEntry(enis[4].ID, base, string(leaving.UID)),
		"10.0.9.9":        `{"ID":"eni-0123456789abcdef0"}`, // the pre-UID format
		"10.0.9.10":       "not json",
		"10.0.9.11":       testenv.K8sENITaggerCacheEntry("eni-0123456789abcdef0", nil, "../../etc"),
		"not-an-ip":       testenv.K8sENITaggerCacheEntry(enis[1].ID, nil, string(uuid.NewUUID())),
		"10.0.9.12":       testenv.K8sENITaggerCacheEntry(enis[1].ID, nil, strings.Repeat("a", 40<<10)),
	}
	original := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tagger.OriginalCacheName, Namespace: h.opsNS}, Data: data}
	if err := h.k8s.Create(ctx, original); err != nil {
		t.Fatal(err)
	}
	o := h.options()
	if inventory {
		o.InventoryInterval = time.Hour
	}
	h.startManager(o)

	h.eventually("the deleted pod's tags removed", func() bool { return maps.Equal(h.eniTags(enis[0].ID), base) },
		func() string { return fmt.Sprint(h.eniTags(enis[0].ID)) })
	shard := h.waitImportMark()
	for i := 1; i < 5; i++ {
		if got := h.eniTags(enis[i].ID); maps.Equal(got, base) || got["Team"] == "" {
			t.Errorf("ENI %d: tags %v were changed", i, got)
		}
	}
	// The pod still running at the switch is adopted from its
	// annotations, without a write, and cleaned up when it goes.
	leavingKey := h.ns + "/leaving"
	h.eventually("the running pod adopted, imported records forgotten", func() bool {
		all := h.rec.Ledger().All()
		return len(all) == 1 && all[0].Pod == leavingKey
	}, func() string { return fmt.Sprint(h.rec.Ledger().All()) })
	if err := h.k8s.Delete(ctx, leaving); err != nil {
		t.Fatal(err)
	}
	h.eventually("the tags of the pod deleted after the start removed", func() bool { return maps.Equal(h.eniTags(enis[4].ID), base) },
		func() string { return fmt.Sprint(h.eniTags(enis[4].ID)) })

	// A restart does not import again: the same tags written back stay.
	h.stopManager()
	if err := h.ec2Client(nil).CreateTags(ctx, enis[0].ID, union(podTags, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(podTags)})); err != nil {
		t.Fatal(err)
	}
	h.startManager(o)
	time.Sleep(time.Second)
	if got := h.eniTags(enis[0].ID); got["Team"] != "Dev" {
		t.Errorf("the import ran again after a restart: ENI tags %v", got)
	}
	if again := h.waitImportMark(); again != shard {
		t.Errorf("the mark changed from %s to %s", shard, again)
	}
	var after corev1.ConfigMap
	if err := h.k8s.Get(ctx, client.ObjectKeyFromObject(original), &after); err != nil || !maps.Equal(after.Data, data) {
		t.Errorf("the original's ConfigMap changed: %v", err)
	}
}

// waitImportMark waits for the mark on ledger shard 00 and returns it.
func (h *harness) waitImportMark() string {
	var mark string
	h.eventually("the import marked on shard 00", func() bool {
		var cm corev1.ConfigMap
		err := h.k8s.Get(context.Background(), client.ObjectKey{Namespace: h.opsNS, Name: "eni-tagger-cache-00"}, &cm)
		mark = cm.Annotations[tagger.ImportedAnnotation]
		return err == nil && mark != ""
	}, nil)
	return mark
}
