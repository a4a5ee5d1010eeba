package tagger_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// policy creates an ENITagPolicy that selects the test's namespace (and
// nothing of the other tests'), deleted at the test's end.
func (h *harness) policy(name string, spec v1alpha1.ENITagPolicySpec) *v1alpha1.ENITagPolicy {
	h.t.Helper()
	spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.ns}}
	p := &v1alpha1.ENITagPolicy{ObjectMeta: metav1.ObjectMeta{Name: h.ns + "-" + name}, Spec: spec}
	if err := h.k8s.Create(context.Background(), p); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = client.IgnoreNotFound(h.k8s.Delete(context.Background(), p)) })
	return p
}

// labelNamespace sets a label of the test's namespace.
func (h *harness) labelNamespace(key, value string) {
	h.t.Helper()
	var ns corev1.Namespace
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: h.ns}, &ns); err != nil {
		h.t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels[key] = value
	if err := h.k8s.Patch(context.Background(), &ns, patch); err != nil {
		h.t.Fatal(err)
	}
}

// waitTags waits until the ENI's tags are want exactly.
func (h *harness) waitTags(eni string, want map[string]string) {
	h.t.Helper()
	var got map[string]string
	h.eventually("ENI "+eni+" tags", func() bool {
		got = h.eniTags(eni)
		return maps.Equal(got, want)
	}, func() string { return fmt.Sprintf("tags %v, want %v", got, want) })
}

func ruleValue(k, v string) v1alpha1.TagRule {
	tv := v1alpha1.TagValue(v)
	return v1alpha1.TagRule{Key: k, Value: &tv}
}

func ruleExpr(k, e string) v1alpha1.TagRule { return v1alpha1.TagRule{Key: k, Expression: e} }

// A policy tags pods without an annotation from their namespace's
// labels; an annotation overrides its defaults but not its enforced tags
// (reported on the pod); its externally managed keys are never written
// nor removed; a namespace label change re-tags; deleting the policy
// removes exactly the tags it wrote.
func TestTagPolicyLifecycle(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	h.labelNamespace("cost-center", "1234")
	h.startManager(h.options())
	plain, annotated := h.loaded.NetworkInterfaces[0], h.loaded.NetworkInterfaces[1]
	// Someone else's Owner tag on the first ENI, and the key in the
	// annotation of the second pod: both left alone.
	if err := h.ec2Client(nil).CreateTags(context.Background(), plain.ID, map[string]string{"Owner": "finance"}); err != nil {
		t.Fatal(err)
	}
	p := h.policy("cost", v1alpha1.ENITagPolicySpec{
		Defaults:              []v1alpha1.TagRule{ruleExpr("CostCenter", "namespaceObject.labels['cost-center']"), ruleExpr("App", "pod.labels['app']")},
		Enforced:              []v1alpha1.TagRule{ruleValue("Env", "prod")},
		ExternallyManagedKeys: []string{"Owner"},
	})
	h.pod("plain", plain.PrivateIP, nil)
	h.pod("annotated", annotated.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "CostCenter=9999,Env=dev,Owner=me,Team=search"})

	base := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	plainWant := map[string]string{"CostCenter": "1234", "App": "plain", "Env": "prod"}
	h.waitTags(plain.ID, withHash(merge(base, plainWant, map[string]string{"Owner": "finance"}), plainWant))
	annotatedWant := map[string]string{"CostCenter": "9999", "App": "annotated", "Env": "prod", "Team": "search"}
	h.waitTags(annotated.ID, withHash(merge(base, annotatedWant), annotatedWant))
	cond := h.waitCondition("annotated", tagger.ReasonSynced, `enforces "Env"="prod" over the annotation's "dev"`)
	if !strings.Contains(cond.Message, fmt.Sprintf(`policy %q gave "App" (default), "Env" (enforced)`, p.Name)) {
		t.Errorf("condition %q does not say which policy gave which key", cond.Message)
	}
	h.waitEvent("annotated", "Warning/Synced")
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool {
		return st.MatchedPods == 2 && st.TaggedPods == 2 && st.RefusedPods == 0 && st.ObservedGeneration == p.Generation &&
			meta.IsStatusConditionTrue(st.Conditions, "Ready")
	})

	// The namespace's label drives the tag.
	h.labelNamespace("cost-center", "5678")
	plainWant["CostCenter"] = "5678"
	h.waitTags(plain.ID, withHash(merge(base, plainWant, map[string]string{"Owner": "finance"}), plainWant))
	h.waitCondition("plain", tagger.ReasonSynced, tagplan.Hash(plainWant))
	// The policy changed it, not the pod's author: no event on the pod
	// (a policy edit would be one on each of thousands).
	for _, e := range h.events("plain") {
		if strings.HasPrefix(e, "Normal/Synced") {
			t.Errorf("event %q on a pod whose tags only its policy changed", e)
		}
	}

	// Deleted: the policy's tags go, the annotation's stay or come back.
	if err := h.k8s.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.waitTags(plain.ID, merge(base, map[string]string{"Owner": "finance"}))
	back := map[string]string{"CostCenter": "9999", "Env": "dev", "Owner": "me", "Team": "search"}
	h.waitTags(annotated.ID, withHash(merge(base, back), back))
}

// A policy whose expression does not compile says so in its status, and
// the pods it selects are refused with their ENIs untouched: no EC2 write.
func TestBrokenTagPolicyTouchesNoPod(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	h.startManager(h.options())
	eni := h.loaded.NetworkInterfaces[0]
	p := h.policy("typo", v1alpha1.ENITagPolicySpec{Enforced: []v1alpha1.TagRule{ruleExpr("Team", "pod.labels['team'")}})
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.TagPolicyReasonInvalidExpression &&
			strings.Contains(c.Message, `enforced[0] (key "Team")`)
	})
	h.pod("web", eni.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=web"})
	h.waitCondition("web", tagger.ReasonPolicyRefused, fmt.Sprintf("policy %q does not compile", p.Name))
	if n := h.calls()["CreateTags"] + h.calls()["DeleteTags"]; n != 0 {
		t.Errorf("%d tag writes for a pod its broken policy selects: %v", n, h.calls())
	}
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool { return st.MatchedPods == 1 && st.RefusedPods == 1 })

	// Fixed: the pod is tagged.
	fixed := h.getPolicy(p.Name)
	fixed.Spec.Enforced[0].Expression = "pod.labels['app']"
	if err := h.k8s.Update(context.Background(), fixed); err != nil {
		t.Fatal(err)
	}
	h.waitCondition("web", tagger.ReasonSynced, "in sync")
	if got := h.eniTags(eni.ID)["Team"]; got != "web" {
		t.Errorf("Team = %q after the fix; want the enforced pod label, web", got)
	}
}

// Policies and the annotation that would pass EC2's 50 tags are refused
// before any write, naming keys to drop.
func TestTagPolicyFiftyTagLimit(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	h.startManager(h.options())
	var rules []v1alpha1.TagRule
	for i := range 30 {
		rules = append(rules, ruleValue(fmt.Sprintf("P%02d", i), "x"))
	}
	p := h.policy("many", v1alpha1.ENITagPolicySpec{Defaults: rules})
	// The tagger must know the policy before the pod comes: created
	// together, the pod is tagged from its annotation and refused after.
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool {
		return meta.IsStatusConditionTrue(st.Conditions, "Ready")
	})
	var pairs []string
	for i := range 20 {
		pairs = append(pairs, fmt.Sprintf("A%02d=y", i))
	}
	h.pod("big", h.loaded.NetworkInterfaces[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: strings.Join(pairs, ",")})
	h.waitCondition("big", tagger.ReasonPolicyRefused, `51 tags: 20 from the annotation, 30 from policies and 1 of the operator's own; an ENI holds at most 50: drop 1, e.g. "A00" (annotation)`)
	if n := h.calls()["CreateTags"]; n != 0 {
		t.Errorf("%d CreateTags for a refused pod", n)
	}
}

// --default-tags go on every ENI the tagger tags, over the annotation,
// and make no unannotated pod the tagger's business.
func TestDefaultTagsFlag(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	o := h.options()
	o.DefaultTags = map[string]string{"Cluster": "prod"}
	h.startManager(o)
	tagged, other := h.loaded.NetworkInterfaces[0], h.loaded.NetworkInterfaces[1]
	h.pod("tagged", tagged.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=a,Cluster=mine"})
	h.pod("other", other.PrivateIP, nil)
	want := map[string]string{"Team": "a", "Cluster": "prod"}
	base := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	h.waitTags(tagged.ID, withHash(merge(base, want), want))
	h.waitCondition("tagged", tagger.ReasonSynced, `policy "--default-tags" gave "Cluster" (enforced)`)
	if got := h.eniTags(other.ID); !maps.Equal(got, base) {
		t.Errorf("the unannotated pod's ENI has tags %v; want it untouched", got)
	}
}

func (h *harness) getPolicy(name string) *v1alpha1.ENITagPolicy {
	h.t.Helper()
	var p v1alpha1.ENITagPolicy
	if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
		h.t.Fatal(err)
	}
	return &p
}

// waitStatus waits until the policy's status satisfies ok.
func (h *harness) waitStatus(name string, ok func(v1alpha1.ENITagPolicyStatus) bool) {
	h.t.Helper()
	var last v1alpha1.ENITagPolicyStatus
	h.eventually("policy "+name+" status", func() bool {
		var p v1alpha1.ENITagPolicy
		if err := h.k8s.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil && !apierrors.IsNotFound(err) {
			h.t.Fatal(err)
		}
		last = p.Status
		return ok(last)
	}, func() string { return fmt.Sprintf("status %+v", last) })
}

// Restarted with its pods in sync, the tagger writes nothing: no pod is
// reconciled before the cluster's policies are compiled, so none loses
// their tags for a moment.
func TestTagPolicyRestartInSyncWritesNothing(t *testing.T) {
	h := newHarness(t, branchWorld(3))
	h.startManager(h.options())
	h.policy("cost", v1alpha1.ENITagPolicySpec{Enforced: []v1alpha1.TagRule{ruleExpr("CostCenter", "'cc-' + pod.labels['app']")}})
	for i, e := range h.loaded.NetworkInterfaces {
		h.pod(fmt.Sprintf("p%d", i), e.PrivateIP, nil)
	}
	for i := range h.loaded.NetworkInterfaces {
		h.waitCondition(fmt.Sprintf("p%d", i), tagger.ReasonSynced, `gave "CostCenter" (enforced)`)
	}
	h.startManager(h.options())
	h.eventually("every pod reconciled after the restart", func() bool { return h.labelled("eni_operator_tagger_reconciles_total", "result", "success") >= 3 }, nil)
	if n := h.calls()["CreateTags"] + h.calls()["DeleteTags"]; n != 0 {
		t.Errorf("%d tag writes after a restart in sync: %v", n, h.calls())
	}
}

// Two policies of equal priority giving a key different values: the
// first name wins, the pod's condition and event say so, and both
// policies' Ready conditions quote it.
func TestTagPolicyConflictIsReportedOnBoth(t *testing.T) {
	h := newHarness(t, branchWorld(1))
	h.startManager(h.options())
	a := h.policy("a-team", v1alpha1.ENITagPolicySpec{Defaults: []v1alpha1.TagRule{ruleValue("Team", "alpha")}})
	b := h.policy("b-team", v1alpha1.ENITagPolicySpec{Defaults: []v1alpha1.TagRule{ruleValue("Team", "beta")}})
	h.pod("web", h.loaded.NetworkInterfaces[0].PrivateIP, nil)
	want := fmt.Sprintf(`policies %q and %q (equal priority) disagree on "Team": "alpha" wins by name over "beta"`, a.Name, b.Name)
	h.waitCondition("web", tagger.ReasonSynced, want)
	h.waitEvent("web", "Warning/Synced")
	if got := h.eniTags(h.loaded.NetworkInterfaces[0].ID)["Team"]; got != "alpha" {
		t.Errorf("Team = %q; want the first name's alpha", got)
	}
	for _, p := range []*v1alpha1.ENITagPolicy{a, b} {
		h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, "Ready")
			return st.MatchedPods == 1 && st.TaggedPods == 1 && c != nil && strings.Contains(c.Message, want)
		})
	}
}

// A pod with no labels and no annotation, created after a policy that
// selects its namespace, is tagged like any other: no label is needed
// for a namespace-selected policy to apply.
func TestUnlabelledPodIsPolicyTagged(t *testing.T) {
	h := newHarness(t, branchWorld(2))
	h.startManager(h.options())
	p := h.policy("env", v1alpha1.ENITagPolicySpec{Enforced: []v1alpha1.TagRule{ruleValue("Env", "prod")}})
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool {
		return st.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(st.Conditions, "Ready")
	})
	bare, labelled := h.loaded.NetworkInterfaces[0], h.loaded.NetworkInterfaces[1]
	h.barePod("bare", bare.PrivateIP)
	h.pod("labelled", labelled.PrivateIP, nil)

	base := map[string]string{"Name": "branch", "vpc.amazonaws.com/eni-owner": "cni"}
	want := map[string]string{"Env": "prod"}
	h.waitTags(labelled.ID, withHash(merge(base, want), want))
	h.waitTags(bare.ID, withHash(merge(base, want), want))
	h.waitCondition("bare", tagger.ReasonSynced, tagplan.Hash(want))
	h.waitStatus(p.Name, func(st v1alpha1.ENITagPolicyStatus) bool { return st.MatchedPods == 2 && st.TaggedPods == 2 })
}
