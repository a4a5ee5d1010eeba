package iam

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// adoptStatement reads docs/migration.md's temporary IAM statement for the
// migration from aws-multi-eni-controller (the JSON block with Sid
// AdoptMultiENIControllerENIs), strictly, as a policy of its own.
func adoptStatement(t *testing.T) Policy {
	t.Helper()
	raw, err := os.ReadFile("../../docs/migration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	at := strings.Index(text, `"Sid": "AdoptMultiENIControllerENIs"`)
	if at < 0 {
		t.Fatal("docs/migration.md: no AdoptMultiENIControllerENIs statement")
	}
	start := strings.LastIndex(text[:at], "```json\n") + len("```json\n")
	end := at + strings.Index(text[at:], "```")
	block := strings.ReplaceAll(text[start:end], placeholder, cluster)
	dec := json.NewDecoder(bytes.NewReader([]byte(block)))
	dec.DisallowUnknownFields()
	var st Statement
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("docs/migration.md's adoption statement: %v", err)
	}
	return Policy{Version: "2012-10-17", Statement: []Statement{st}}
}

// The migration's statement lets the NodeENI controller write its
// ownership tags onto ENIs carrying aws-multi-eni-controller's managed-by
// tag, for this cluster only, and nothing else; the shipped documents
// alone refuse that write (so adoption is reported until the statement is
// added), and the tagger's deny, on the same role, still wins.
func TestAdoptionStatement(t *testing.T) {
	tg, ne, adopt := load(t, "tagger.json", cluster), load(t, "nodeeni.json", cluster), adoptStatement(t)
	original := map[string][]string{"aws:ResourceTag/" + eniplan.OriginalTagManagedBy: {eniplan.OriginalManagedBy},
		"aws:ResourceTag/" + eniplan.OriginalTagNodeENI: {"multus"}}
	ownership := []string{eniplan.TagCluster, eniplan.TagNodeENI, eniplan.TagNodeENIUID, eniplan.TagNode, eniplan.TagInstance,
		eniplan.TagCreatedAt, eniplan.TagDeviceIndex, eniplan.TagDeviceIndexBase, eniplan.TagNoManage}
	tagReq := func(resource map[string][]string, clusterTag string) Request {
		ctx := map[string][]string{tagKeys: ownership, "aws:RequestTag/" + eniplan.TagCluster: {clusterTag}}
		for k, v := range resource {
			ctx[k] = v
		}
		return Request{Action: createTags, Resource: otherENI, Context: ctx}
	}
	D, A, I := ExplicitDeny, Allowed, ImplicitDeny
	for _, tc := range []struct {
		name     string
		req      Request
		policies []Policy
		want     Decision
	}{
		{"adopt, shipped NodeENI document only", tagReq(original, cluster), []Policy{ne}, I},
		{"adopt, with the migration statement", tagReq(original, cluster), []Policy{ne, adopt}, A},
		{"adopt, with the tagger's deny on the same role", tagReq(original, cluster), []Policy{tg, ne, adopt}, D},
		{"claim a pod's ENI", tagReq(map[string][]string{"aws:ResourceTag/Team": {"shop"}}, cluster), []Policy{ne, adopt}, I},
		{"adopt for another cluster", tagReq(original, "staging"), []Policy{ne, adopt}, I},
		{"adopt without the cluster tag", Request{Action: createTags, Resource: otherENI,
			Context: map[string][]string{tagKeys: {"Team"}, "aws:ResourceTag/" + eniplan.OriginalTagManagedBy: {eniplan.OriginalManagedBy}}},
			[]Policy{ne, adopt}, I},
		{"detach an original ENI before adoption", Request{Action: "ec2:DetachNetworkInterface", Resource: otherENI, Context: original},
			[]Policy{ne, adopt}, I},
		{"delete an original ENI before adoption", Request{Action: "ec2:DeleteNetworkInterface", Resource: otherENI, Context: original},
			[]Policy{ne, adopt}, I},
	} {
		got, err := Evaluate(tc.policies, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
