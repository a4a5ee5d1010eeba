package tagger_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/internal/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

func branchWorld(n int) emulator.World {
	return emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: n,
		Tags: map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}}}}
}

func withHash(t map[string]string, desired map[string]string) map[string]string {
	out := maps.Clone(t)
	out[tagger.HashTag] = tagger.Hash(desired)
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
			msg = fmt.Sprintf("%d tags in sync on ENI %s (hash %s)", len(desired), eni, tagger.Hash(onENI))
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
	if !maps.Equal(lastApplied(p), v1) || p.Annotations[tagger.LastAppliedHashAnnotation] != tagger.Hash(v1) {
		t.Fatalf("scenario 2: last-applied annotations %v", p.Annotations)
	}
	c := condition(p)
	if c.Status != corev1.ConditionTrue || c.ObservedGeneration != p.Generation || !strings.Contains(c.Message, eni) {
		t.Fatalf("scenario 2: condition %+v", c)
	}
	h.waitEvent("web", "Normal/Synced")
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
	assertLastCall(t, h, "CreateTags", []string{"Team=Ops", tagger.HashTag + "=" + tagger.Hash(v2)})

	// 4. Key added: one CreateTags with the new key and the hash only.
	v3 := map[string]string{"Team": "Ops", "Cost": "1", "App": "web"}
	step("key added", "Team=Ops,Cost=1,App=web", tagger.ReasonSynced, v3, map[string]int{"CreateTags": 1})
	assertLastCall(t, h, "CreateTags", []string{"App=web", tagger.HashTag + "=" + tagger.Hash(v3)})

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
	h.waitCondition("web", tagger.ReasonSynced, "")
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
