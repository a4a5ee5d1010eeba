package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// taggedByOriginal is a pod k8s-eni-tagger tagged: its annotation, its
// bookkeeping annotations and finalizer, and the tags on its ENI.
type taggedByOriginal struct {
	name, eni, ip string
	tags          map[string]string
}

func (p taggedByOriginal) pod(ns string) *corev1.Pod {
	applied, _ := json.Marshal(p.tags)
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(p.tags)) {
		pairs = append(pairs, k+"="+p.tags[k])
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns,
		Annotations: map[string]string{tagger.DefaultAnnotationKey: strings.Join(pairs, ","),
			tagger.LastAppliedTagsAnnotation: string(applied), tagger.LastAppliedHashAnnotation: tagger.K8sENITaggerHash(p.tags)},
		Finalizers: []string{tagger.Finalizer}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
}

// docs/migration.md's procedure from k8s-eni-tagger: scale it to zero, start
// eni-operator with the original chart's environment, remove the
// original. Pods it tagged are adopted without a write; the pod deleted
// while neither ran loses its tags (through the original's cache); a new
// pod is tagged; a tagged pod carrying the original's finalizer is
// deleted without getting stuck; the original's ConfigMap is left as it
// was.
func TestFromK8sENITagger(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx := context.Background()
	k8s := testenv.Client(t, env.Config)
	appsNS, opsNS := "shop", "eni-tagger-system"
	testenv.CreateNamespaces(t, k8s, appsNS, opsNS)

	base := map[string]string{"Name": "branch"}
	cloud := testenv.NewEC2(t, emulator.Options{}, testenv.DefaultWorld(testenv.WithENIs(testenv.BranchENIs(4, base))))
	enis := cloud.World.NetworkInterfaces
	running := []taggedByOriginal{
		{name: "web-0", eni: enis[0].ID, ip: enis[0].PrivateIP, tags: map[string]string{"Team": "Dev"}},
		{name: "web-1", eni: enis[1].ID, ip: enis[1].PrivateIP, tags: map[string]string{"Team": "Dev", "Cost": "42"}},
	}
	// The pod deleted while neither ran: only the original's cache knows it.
	goneTags := map[string]string{"Team": "Ops"}
	goneUID := string(uuid.NewUUID())
	cache := map[string]string{}

	// 1. The state k8s-eni-tagger leaves (scaled to zero): ENI tags with
	// its token, pods with its annotations and finalizer, its cache.
	for _, p := range running {
		seedTags(t, cloud, p.eni, union(p.tags, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(p.tags)}))
		if !testenv.CreatePod(t, k8s, p.pod(appsNS), testenv.Running(p.ip)) {
			t.Fatalf("pod %s not created", p.name)
		}
		cache[p.ip] = testenv.K8sENITaggerCacheEntry(p.eni, base, string(getPod(t, k8s, appsNS, p.name).UID))
	}
	seedTags(t, cloud, enis[2].ID, union(goneTags, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(goneTags)}))
	cache[enis[2].PrivateIP] = testenv.K8sENITaggerCacheEntry(enis[2].ID, base, goneUID)
	original := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tagger.OriginalCacheName, Namespace: opsNS}, Data: cache}
	if err := k8s.Create(ctx, original); err != nil {
		t.Fatal(err)
	}
	cloud.Emulator.ResetCounts()

	// 2. Install eni-operator with the original chart's environment.
	startOperatorLikeOriginalChart(t, env, cloud, opsNS)
	for _, p := range running {
		waitCondition(t, k8s, appsNS, p.name, tagger.ReasonSynced)
	}
	eventually(t, "the tags of the pod deleted during the switch removed", func() (bool, string) {
		got := cloud.ENI(t, enis[2].ID).Tags
		return maps.Equal(got, base), fmt.Sprint(got)
	})

	// 3. A new pod is tagged by the new operator.
	newPod := taggedByOriginal{name: "new", eni: enis[3].ID, ip: enis[3].PrivateIP, tags: map[string]string{"Team": "New"}}
	fresh := newPod.pod(appsNS)
	delete(fresh.Annotations, tagger.LastAppliedTagsAnnotation)
	delete(fresh.Annotations, tagger.LastAppliedHashAnnotation)
	fresh.Finalizers = nil
	testenv.CreatePod(t, k8s, fresh, testenv.Running(newPod.ip))
	waitCondition(t, k8s, appsNS, "new", tagger.ReasonSynced)

	// No write named the ENIs of the pods the original tagged: adopted as
	// they were, tags and token included.
	for _, c := range cloud.Emulator.Calls() {
		if c.Action != "CreateTags" && c.Action != "DeleteTags" {
			continue
		}
		for _, p := range running {
			if slices.ContainsFunc(flatten(c.Params), func(v string) bool { return v == p.eni }) {
				t.Errorf("%s named the ENI of %s, which k8s-eni-tagger had tagged: %v", c.Action, p.name, c.Params)
			}
		}
	}
	for _, p := range running {
		want := union(base, p.tags, map[string]string{tagger.HashTag: tagger.K8sENITaggerHash(p.tags)})
		if got := cloud.ENI(t, p.eni).Tags; !maps.Equal(got, want) {
			t.Errorf("ENI of %s carries %v, want %v as the original left it", p.name, got, want)
		}
	}

	// 4. A pod with the original's finalizer is deleted: not stuck, and
	// its tags go with it.
	if err := k8s.Delete(ctx, getPod(t, k8s, appsNS, "web-0")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web-0 gone", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: appsNS, Name: "web-0"}, &corev1.Pod{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if got := cloud.ENI(t, running[0].eni).Tags; !maps.Equal(got, base) {
		t.Errorf("web-0's ENI carries %v after the pod went, want %v", got, base)
	}

	// 5. The original's ConfigMap is as it left it (a rollback finds it).
	var after corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(original), &after); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(after.Data, cache) {
		t.Error("the original's cache ConfigMap was changed")
	}
}

// startOperatorLikeOriginalChart runs the eni-operator binary configured
// the way k8s-eni-tagger's chart configures the original: every setting
// as an ENI_TAGGER_* variable (bare ports included), the namespace from
// the downward API, only the VPC (instance metadata in production) and
// where AWS is added.
func startOperatorLikeOriginalChart(t *testing.T, env *testenv.Env, cloud *testenv.EC2, opsNS string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "eni-operator")
	testenv.BuildCommand(t, "./cmd/eni-operator", bin)
	metricsPort := port(testenv.FreeAddr(t))
	vars := []string{
		"KUBECONFIG=" + testenv.WriteKubeconfig(t, env.Config), "POD_NAMESPACE=" + opsNS,
		"ENI_TAGGER_ANNOTATION_KEY=eni-tagger.io/tags", "ENI_TAGGER_WATCH_NAMESPACE=", "ENI_TAGGER_MAX_CONCURRENT_RECONCILES=1",
		"ENI_TAGGER_DRY_RUN=false", "ENI_TAGGER_METRICS_BIND_ADDRESS=" + metricsPort,
		"ENI_TAGGER_HEALTH_PROBE_BIND_ADDRESS=" + port(testenv.FreeAddr(t)), "ENI_TAGGER_SUBNET_IDS=",
		"ENI_TAGGER_ALLOW_SHARED_ENI_TAGGING=false", "ENI_TAGGER_ENABLE_ENI_CACHE=true", "ENI_TAGGER_ENABLE_CACHE_CONFIGMAP=true",
		"ENI_TAGGER_CACHE_BATCH_INTERVAL=2s", "ENI_TAGGER_CACHE_BATCH_SIZE=20", "ENI_TAGGER_AWS_RATE_LIMIT_QPS=10",
		"ENI_TAGGER_AWS_RATE_LIMIT_BURST=20", "ENI_TAGGER_PPROF_BIND_ADDRESS=0", "ENI_TAGGER_TAG_NAMESPACE=",
		"ENI_TAGGER_POD_RATE_LIMIT_QPS=0.1", "ENI_TAGGER_POD_RATE_LIMIT_BURST=1", "ENI_TAGGER_RATE_LIMITER_CLEANUP_INTERVAL=1m",
	}
	for k, v := range testenv.AWSEnv(cloud.URL) {
		vars = append(vars, k+"="+v)
	}
	// The chart's only argument; /metrics over plain HTTP so the test can
	// read it (production serves it over HTTPS to authorised readers).
	testenv.StartProcess(t, "eni-operator", bin, vars, "--leader-elect", "--vpc-id="+cloud.VPC, "--metrics-secure=false")
	eventually(t, "the operator's metrics on the bare port "+metricsPort, func() (bool, string) {
		_, err := testenv.Scrape("http://127.0.0.1:" + metricsPort + "/metrics")
		return err == nil, fmt.Sprint(err)
	})
}

func port(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }

func seedTags(t *testing.T, cloud *testenv.EC2, eni string, tags map[string]string) {
	t.Helper()
	if err := cloud.Client(ec2.Config{}).CreateTags(context.Background(), eni, tags); err != nil {
		t.Fatal(err)
	}
}

func getPod(t *testing.T, k8s client.Client, ns, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func waitCondition(t *testing.T, k8s client.Client, ns, name, reason string) {
	t.Helper()
	eventually(t, name+" "+reason, func() (bool, string) {
		p := getPod(t, k8s, ns, name)
		for _, c := range p.Status.Conditions {
			if c.Type == tagger.ConditionType {
				return c.Reason == reason, c.Reason + ": " + c.Message
			}
		}
		return false, "no condition"
	})
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, what, 2*time.Minute, cond)
}

func union(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

func flatten(params map[string][]string) []string {
	var out []string
	for _, v := range params {
		out = append(out, v...)
	}
	return out
}
