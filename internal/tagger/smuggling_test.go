package tagger_test

import (
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// conditionHash is the hash a condition message claims is on the ENI.
var conditionHash = regexp.MustCompile(`\(hash ([0-9a-f]+)\)`)

// Issue 25: an annotation whose values held NULs passed validation, the
// NUL-joined tag-set encoding read them as the NodeENI controller's
// ownership tags, the ENI lost its eni-tagger.io/hash, and the pod's
// condition still said "Synced (hash ...)". Now both formats are refused
// with the code point named, no tag is written for them, a pod that was
// in sync keeps its ENI's tags and stops claiming them, and every hash a
// condition names is the one on the ENI.
func TestSmuggledTagsAreRefusedAndConditionsClaimOnlyHashesTheENICarries(t *testing.T) {
	h := newHarness(t, branchWorld(4))
	enis := h.loaded.NetworkInterfaces
	initial := h.eniTags(enis[0].ID)
	h.startManager(h.options())
	attacks := map[string]string{
		"json-nul":  `{"A":"x\u0000eni-operator.io/cluster\u0000sandbox\u0000eni-operator.io/nodeeni\u0000n\u0000eni-operator.io/node\u0000ip-10-0-0-1\u0000","D":"x\u0000Note"}`,
		"pairs-nul": "A=x\x00eni-operator.io/cluster\x00sandbox\x00,D=x\x00Note",
	}
	h.pod("json-nul", enis[0].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: attacks["json-nul"]})
	h.pod("pairs-nul", enis[1].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: attacks["pairs-nul"]})
	h.pod("normal", enis[2].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: `{"Team":"Dev","Note":"a b"}`})
	h.pod("turned", enis[3].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "Team=Ops"})

	for _, name := range []string{"json-nul", "pairs-nul"} {
		h.waitCondition(name, tagger.ReasonInvalidTags, `tag "A": the value holds U+0000, a control character`)
	}
	h.assertHashClaim("normal", enis[2].ID, map[string]string{"Team": "Dev", "Note": "a b"})
	h.assertHashClaim("turned", enis[3].ID, map[string]string{"Team": "Ops"})
	before := h.eniTags(enis[3].ID)

	// A pod in sync turned into the attack: refused, its ENI untouched.
	h.annotate("turned", attacks["json-nul"])
	cond := h.waitCondition("turned", tagger.ReasonInvalidTags, "U+0000")
	if conditionHash.MatchString(cond.Message) {
		t.Errorf("a refused pod's condition claims a hash: %q", cond.Message)
	}
	h.quiet()
	if got := h.eniTags(enis[3].ID); !maps.Equal(got, before) {
		t.Errorf("ENI of the refused pod: tags %q, want them as they were: %q", got, before)
	}
	for i, name := range []string{"json-nul", "pairs-nul"} {
		if got := h.eniTags(enis[i].ID); !maps.Equal(got, initial) {
			t.Errorf("%s: ENI %s has tags %q, want them as they were: %q", name, enis[i].ID, got, initial)
		}
	}
	for _, e := range enis {
		for k := range h.eniTags(e.ID) {
			if strings.HasPrefix(k, tagkeys.NodeENIPrefix) || tagkeys.CheckKey(k) != nil {
				t.Errorf("ENI %s carries %q", e.ID, k)
			}
		}
	}
	h.assertHashClaim("normal", enis[2].ID, map[string]string{"Team": "Dev", "Note": "a b"})
}

// assertHashClaim waits for the pod to be Synced and checks the ENI
// carries the hash its condition names, with the tags it asked for.
func (h *harness) assertHashClaim(pod, eniID string, want map[string]string) {
	h.t.Helper()
	cond := h.waitCondition(pod, tagger.ReasonSynced, "(hash ")
	m := conditionHash.FindStringSubmatch(cond.Message)
	if m == nil {
		h.t.Fatalf("%s: no hash in %q", pod, cond.Message)
	}
	got := h.eniTags(eniID)
	if got[tagger.HashTag] != m[1] || m[1] != tagplan.Hash(want) {
		h.t.Errorf("%s: condition names hash %s, ENI %s carries %q, the tags hash to %s", pod, m[1], eniID, got[tagger.HashTag], tagplan.Hash(want))
	}
	for k, v := range want {
		if got[k] != v {
			h.t.Errorf("%s: ENI %s has %s=%q, want %q", pod, eniID, k, got[k], v)
		}
	}
}
