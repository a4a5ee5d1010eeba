package tagplan

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

type tags = map[string]string

// withHash returns t plus the hash tag of h.
func withHash(t tags, h tags) tags {
	out := maps.Clone(t)
	out[HashTag] = Hash(h)
	return out
}

func TestPlanTags(t *testing.T) {
	v1 := tags{"Team": "Dev", "Cost": "1"}
	foreign := tags{"Name": "node-eni", "Owner": "ops"}
	tests := []struct {
		name                 string
		in                   PlanInput
		create, delete       tags
		applied              tags
		hash, conflict, many string
	}{
		{
			name:   "first annotation: every tag plus the hash",
			in:     PlanInput{Desired: v1, ENITags: foreign},
			create: withHash(v1, v1), delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name:   "value changed: only that key plus the new hash",
			in:     PlanInput{Desired: tags{"Team": "Ops", "Cost": "1"}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(v1, v1)},
			create: tags{"Team": "Ops", HashTag: Hash(tags{"Team": "Ops", "Cost": "1"})}, delete: tags{},
			applied: tags{"Team": "Ops", "Cost": "1"}, hash: Hash(tags{"Team": "Ops", "Cost": "1"}),
		},
		{
			name:   "key added: only the new key plus the hash",
			in:     PlanInput{Desired: tags{"Team": "Dev", "Cost": "1", "App": "web"}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(v1, v1)},
			create: tags{"App": "web", HashTag: Hash(tags{"Team": "Dev", "Cost": "1", "App": "web"})}, delete: tags{},
			applied: tags{"Team": "Dev", "Cost": "1", "App": "web"}, hash: Hash(tags{"Team": "Dev", "Cost": "1", "App": "web"}),
		},
		{
			name:   "key removed: one value-matched delete, the token stays",
			in:     PlanInput{Desired: tags{"Team": "Dev"}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(v1, v1)},
			create: tags{}, delete: tags{"Cost": "1"}, applied: tags{"Team": "Dev"}, hash: Hash(v1),
		},
		{
			name:   "after a removal the next change is not a conflict",
			in:     PlanInput{Desired: tags{"Team": "Ops"}, Applied: tags{"Team": "Dev"}, AppliedHash: Hash(v1), ENITags: withHash(tags{"Team": "Dev"}, v1)},
			create: tags{"Team": "Ops", HashTag: Hash(tags{"Team": "Ops"})}, delete: tags{}, applied: tags{"Team": "Ops"}, hash: Hash(tags{"Team": "Ops"}),
		},
		{
			name:   "unchanged: nothing",
			in:     PlanInput{Desired: v1, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(v1, v1)},
			create: tags{}, delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name:   "mixed: one create and one delete",
			in:     PlanInput{Desired: tags{"Team": "Ops", "App": "web"}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(v1, v1)},
			create: tags{"Team": "Ops", "App": "web", HashTag: Hash(tags{"Team": "Ops", "App": "web"})}, delete: tags{"Cost": "1"},
			applied: tags{"Team": "Ops", "App": "web"}, hash: Hash(tags{"Team": "Ops", "App": "web"}),
		},
		{
			name:     "hash conflict: nothing written",
			in:       PlanInput{Desired: v1, ENITags: tags{HashTag: "someoneelse"}},
			conflict: `"someoneelse"`,
		},
		{
			name:   "hash conflict ignored for shared ENIs",
			in:     PlanInput{Desired: v1, ENITags: tags{HashTag: "someoneelse"}, IgnoreOwnership: true},
			create: withHash(v1, v1), delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name:   "same desired set as the current owner is no conflict",
			in:     PlanInput{Desired: v1, ENITags: withHash(v1, v1)},
			create: tags{}, delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name:   "annotation removed: our tags and token go, others stay",
			in:     PlanInput{Desired: tags{}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(tags{"Team": "Dev", "Cost": "1", "Name": "x"}, v1)},
			create: tags{}, delete: tags{"Team": "Dev", "Cost": "1", HashTag: Hash(v1)}, applied: tags{}, hash: "",
		},
		{
			name:   "annotation removed: a key someone else changed is theirs now",
			in:     PlanInput{Desired: tags{}, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(tags{"Team": "Other", "Cost": "1"}, v1)},
			create: tags{}, delete: tags{"Cost": "1", HashTag: Hash(v1)}, applied: tags{}, hash: "",
		},
		{
			name:   "drift: a removed tag is restored without a hash write",
			in:     PlanInput{Desired: v1, Applied: v1, AppliedHash: Hash(v1), ENITags: withHash(tags{"Team": "Dev"}, v1)},
			create: tags{"Cost": "1"}, delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name:   "drift: a removed hash tag is restored",
			in:     PlanInput{Desired: v1, Applied: v1, AppliedHash: Hash(v1), ENITags: v1},
			create: tags{HashTag: Hash(v1)}, delete: tags{}, applied: v1, hash: Hash(v1),
		},
		{
			name: "50 tags counting those already on the ENI",
			in:   PlanInput{Desired: tags{"a": "1", "b": "2"}, ENITags: numbered(48)},
			many: "would carry 51 tags",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanTags(tt.in)
			if tt.conflict != "" || tt.many != "" {
				if tt.conflict != "" && !strings.Contains(p.Conflict, tt.conflict) {
					t.Fatalf("Conflict = %q, want it to mention %q", p.Conflict, tt.conflict)
				}
				if tt.many != "" && (p.TooMany == nil || !strings.Contains(p.TooMany.Error(), tt.many)) {
					t.Fatalf("TooMany = %v, want it to mention %q", p.TooMany, tt.many)
				}
				if !p.Empty() {
					t.Fatalf("a refused plan writes: %+v", p)
				}
				return
			}
			if p.Conflict != "" || p.TooMany != nil {
				t.Fatalf("unexpected refusal: %q %v", p.Conflict, p.TooMany)
			}
			if !maps.Equal(p.Create, tt.create) || !maps.Equal(p.Delete, tt.delete) {
				t.Fatalf("create %v delete %v, want create %v delete %v", p.Create, p.Delete, tt.create, tt.delete)
			}
			if !maps.Equal(p.Applied, tt.applied) || p.Hash != tt.hash {
				t.Fatalf("records applied %v hash %q, want %v %q", p.Applied, p.Hash, tt.applied, tt.hash)
			}
		})
	}
}

func numbered(n int) tags {
	out := tags{}
	for i := range n {
		out[fmt.Sprintf("t%d", i)] = "v"
	}
	return out
}

func TestHashIsOrderFreeAndUnambiguous(t *testing.T) {
	if Hash(tags{"a": "1", "b": "2"}) != Hash(tags{"b": "2", "a": "1"}) {
		t.Fatal("hash depends on map order")
	}
	if Hash(tags{"a": "b=c"}) == Hash(tags{"a=b": "c"}) {
		t.Fatal("different tag sets share a hash")
	}
	if len(Hash(nil)) != 16 {
		t.Fatal("hash is not 16 hex digits")
	}
}

// A plan never writes or removes a reserved key, whatever the desired or
// applied sets hold: the applied set can come from a pod's own
// last-applied annotation, which the pod's owner can edit.
func TestPlanNeverTouchesReservedKeys(t *testing.T) {
	owned := tags{"eni-operator.io/cluster": "prod", "node.k8s.amazonaws.com/no_manage": "true", "kubernetes.io/cluster/prod": "owned", "Name": "x"}
	for _, in := range []PlanInput{
		{Desired: tags{}, Applied: owned, ENITags: owned},              // forged record, annotation emptied
		{Desired: tags{"Team": "Dev"}, Applied: owned, ENITags: owned}, // forged record, real tags
		{Desired: tags{"Team": "Dev"}, Applied: tags{"eni-tagger.io/hash": "zz"}, ENITags: tags{"eni-tagger.io/hash": "zz"}, IgnoreOwnership: true},
		{Desired: tags{"eni-operator.io/nodeeni": "x", "Team": "Dev"}, ENITags: tags{"Name": "x"}}, // policy bypassed
		{Desired: tags{"ENI-Operator.io/Cluster": "c"}, ENITags: tags{}},
	} {
		p := PlanTags(in)
		for k := range p.Create {
			if k != HashTag && reserved(k) {
				t.Errorf("PlanTags(%v) creates reserved %q: %v", in, k, p.Create)
			}
		}
		for k := range p.Delete {
			if reserved(k) && (k != HashTag || in.ENITags[HashTag] != in.AppliedHash || in.AppliedHash == "") {
				t.Errorf("PlanTags(%v) deletes reserved %q: %v", in, k, p.Delete)
			}
		}
	}
}
