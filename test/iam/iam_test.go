// Package iam checks the IAM policy documents in docs/iam against the
// code: the actions each part's start-up permission check verifies, the
// product's reserved tag keys (internal/tagkeys), the NodeENI ownership
// tag, and the Helm chart's copies. It also evaluates the documents, alone
// and attached together to one role, against the EC2 requests the
// operator makes and against forged ones.
package iam

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/podranges"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

const (
	docsDir  = "../../docs/iam"
	chartDir = "../../charts/eni-operator/files/iam"
	// placeholder is what the documents say in place of --cluster-name.
	placeholder = "CLUSTER"
	cluster     = "prod"
	// vpcPlaceholder stands for the ID of the cluster's VPC, and
	// nodesPlaceholder for the name in the kubernetes.io/cluster/<name>
	// tag of the cluster's instances.
	vpcPlaceholder   = "VPC_ID"
	nodesPlaceholder = "EKSNAME"
	clusterVPCID     = "vpc-0cluster"
	eksName          = "eks-prod"
	clusterVPC       = "arn:aws:ec2:eu-west-1:111122223333:vpc/" + clusterVPCID
	otherVPC         = "arn:aws:ec2:eu-west-1:111122223333:vpc/vpc-0other"
	// nodeTag is the instance tag the NodeENI document attaches by.
	nodeTag = "kubernetes.io/cluster/" + eksName
	vpcKey  = "ec2:Vpc"

	eniARN = "arn:aws:ec2:*:*:network-interface/*"
	// reservationARN are the subnet CIDR reservations, the pods' ranges.
	reservationARN = "arn:aws:ec2:*:*:subnet-cidr-reservation/*"
	createTags     = "ec2:CreateTags"
	deleteTags     = "ec2:DeleteTags"
	tagKeys        = "aws:TagKeys"
	createActn     = "ec2:CreateAction"
	tagKeysLike    = "ForAnyValue:StringLike"
)

// load reads a document strictly: unknown fields (NotAction, Principal,
// a misspelt key) fail.
func load(t *testing.T, name, clusterName string) Policy {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(docsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if clusterName != "" {
		raw = bytes.ReplaceAll(raw, []byte(placeholder), []byte(clusterName))
		raw = bytes.ReplaceAll(raw, []byte(vpcPlaceholder), []byte(clusterVPCID))
		raw = bytes.ReplaceAll(raw, []byte(nodesPlaceholder), []byte(eksName))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if dec.More() {
		t.Fatalf("%s: trailing data after the document", name)
	}
	return p
}

// maxManagedPolicy is IAM's quota on a customer managed policy document,
// whitespace not counted (IAM User Guide, "IAM and AWS STS quotas").
const maxManagedPolicy = 6144

func TestDocumentsAreWellFormed(t *testing.T) {
	for _, name := range []string{"tagger.json", "nodeeni.json"} {
		p := load(t, name, "")
		raw, _ := os.ReadFile(filepath.Join(docsDir, name))
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if compact.Len() > maxManagedPolicy {
			t.Errorf("%s: %d characters without whitespace; a managed policy holds %d", name, compact.Len(), maxManagedPolicy)
		}
		// IAM accepts tab, LF, CR and U+0020..U+00FF in policy documents.
		for _, r := range string(raw) {
			if r != '\t' && r != '\n' && r != '\r' && (r < 0x20 || r > 0xff) {
				t.Errorf("%s: character %U is not allowed in an IAM policy", name, r)
				break
			}
		}
		if p.Version != "2012-10-17" {
			t.Errorf("%s: Version %q, want 2012-10-17", name, p.Version)
		}
		if len(p.Statement) == 0 {
			t.Errorf("%s: no statements", name)
		}
		sids := map[string]bool{}
		for i, st := range p.Statement {
			if st.Sid == "" || sids[st.Sid] {
				t.Errorf("%s: statement %d: Sid %q missing or repeated", name, i, st.Sid)
			}
			sids[st.Sid] = true
			if st.Effect != "Allow" && st.Effect != "Deny" {
				t.Errorf("%s %s: Effect %q", name, st.Sid, st.Effect)
			}
			if len(st.Action) == 0 || len(st.Resource) == 0 {
				t.Errorf("%s %s: Action and Resource are required", name, st.Sid)
			}
			for _, a := range st.Action {
				if !strings.HasPrefix(a, "ec2:") || strings.ContainsAny(a, "*?") {
					t.Errorf("%s %s: action %q: only named ec2 actions, no wildcards", name, st.Sid, a)
				}
			}
		}
	}
}

func allowedActions(p Policy) []string {
	var out []string
	for _, st := range p.Statement {
		if st.Effect == "Allow" {
			out = append(out, st.Action...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// The documents grant exactly what each part's start-up DryRun check
// verifies: an action missing from a document would be reported missing
// at start, an extra one is a grant nothing uses.
func TestAllowedActionsAreThePermissionChecks(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{"tagger.json", tagger.RequiredIAMActions()},
		{"nodeeni.json", append(nodeeni.RequiredIAMActions(), podranges.RequiredIAMActions()...)},
	} {
		got := allowedActions(load(t, c.doc, ""))
		if want := sorted(c.want); !slices.Equal(got, want) {
			t.Errorf("%s allows %v; the permission check verifies %v", c.doc, got, want)
		}
	}
}

// ownPrefix is the reserved prefix of the tagger's own ownership token
// (eni-tagger.io/hash): the tagger writes and removes that tag itself, so
// the deny cannot cover its prefix (IAM patterns have no "except").
func ownPrefix(t *testing.T) string {
	r, ok := tagkeys.ReservedBy(tagger.HashTag)
	if !ok {
		t.Fatalf("%s is not reserved; the tagger's token must be", tagger.HashTag)
	}
	return r.Prefix
}

func reservedPatterns(t *testing.T) []string {
	var want []string
	for _, p := range tagkeys.Prefixes() {
		if p != ownPrefix(t) {
			want = append(want, p+"*")
		}
	}
	return sorted(want)
}

// denies returns the tagger's Deny statements that cover action.
func denies(p Policy, action string) []Statement {
	var out []Statement
	for _, st := range p.Statement {
		if st.Effect == "Deny" && slices.Contains(st.Action, action) {
			out = append(out, st)
		}
	}
	return out
}

func TestTaggerDenyCoversEveryReservedPrefix(t *testing.T) {
	p := load(t, "tagger.json", "")
	want := reservedPatterns(t)
	for _, action := range []string{createTags, deleteTags} {
		var got []string
		for _, st := range denies(p, action) {
			patterns, ok := st.Condition[tagKeysLike][tagKeys]
			if !ok {
				continue
			}
			got = append(got, patterns...)
			for _, pat := range patterns {
				if globMatch(pat, tagger.HashTag) {
					t.Errorf("%s: pattern %q denies the tagger's own token %s", st.Sid, pat, tagger.HashTag)
				}
			}
			if !slices.Contains(st.Resource, "*") {
				t.Errorf("%s: a deny covers every resource (*), not %v", st.Sid, st.Resource)
			}
			checkDenyExemptions(t, st, action, patterns)
		}
		if got = sorted(got); !slices.Equal(got, want) {
			t.Errorf("the denies of %s list %v; tagkeys.Prefixes() (less the tagger's own %q) gives %v",
				action, got, ownPrefix(t), want)
		}
	}
	// DeleteTags without tag keys deletes every user-defined tag of the
	// resource, reserved ones included, and ForAnyValue is false on an
	// empty key: a separate deny refuses it.
	var all bool
	for _, st := range denies(p, deleteTags) {
		if vals, ok := st.Condition["Null"][tagKeys]; ok && slices.Equal(vals, []string{"true"}) && len(st.Condition) == 1 && len(st.Condition["Null"]) == 1 {
			all = true
		}
	}
	if !all {
		t.Errorf("no Deny of %s when the request names no tag keys (Null %s true)", deleteTags, tagKeys)
	}
}

// checkDenyExemptions allows a reserved-key deny only two exemptions:
// tags set while the NodeENI controller creates an ENI (ec2:CreateAction
// present), and a CreateTags of the NodeENI proof alone, which the
// controller writes right after the create: its own prefix's deny
// holds for any other of its keys in the request. DeleteTags of a
// reserved key is never the product's: nothing may remove one.
func checkDenyExemptions(t *testing.T, st Statement, action string, patterns []string) {
	t.Helper()
	proofOnly := slices.Equal(patterns, []string{tagkeys.NodeENIPrefix + "*"})
	for op, keys := range st.Condition {
		for key, vals := range keys {
			switch {
			case op == tagKeysLike && key == tagKeys:
			case action == createTags && op == "Null" && key == createActn && slices.Equal(vals, []string{"true"}):
			case action == createTags && proofOnly && op == "ForAnyValue:StringNotEquals" && key == tagKeys &&
				slices.Equal(vals, []string{eniplan.TagProof}):
			default:
				t.Errorf("%s: condition %s %s %v narrows the deny of %s", st.Sid, op, key, vals, action)
			}
		}
	}
}

func TestTaggerTagsOnlyENIs(t *testing.T) {
	p := load(t, "tagger.json", "")
	for _, st := range p.Statement {
		if st.Effect != "Allow" {
			continue
		}
		for _, a := range st.Action {
			switch {
			case a == createTags || a == deleteTags:
				if !slices.Equal(st.Resource, []string{eniARN}) {
					t.Errorf("%s: %s on %v; the tagger may tag network interfaces only (%s)", st.Sid, a, st.Resource, eniARN)
				}
				if !inClusterVPC(st) || len(st.Condition) != 1 {
					t.Errorf("%s: %s must be conditioned on the cluster's VPC alone (%s %s), has %v", st.Sid, a, vpcOp, vpcKey, st.Condition)
				}
			case strings.HasPrefix(a, "ec2:Describe"):
			default:
				t.Errorf("%s: the tagger needs no %s", st.Sid, a)
			}
		}
	}
}

// The VPC condition of the grants on subnets, security groups and (the
// tagger's) network interfaces. IfExists because EC2 has no VPC for the
// placeholder IDs of the start-up DryRun checks; every existing subnet,
// security group and VPC ENI has one, so the key is always there for a
// real resource.
const vpcOp = "ArnLikeIfExists"

var vpcPattern = "arn:aws:ec2:*:*:vpc/" + vpcPlaceholder

func inClusterVPC(st Statement) bool {
	return slices.Equal(st.Condition[vpcOp][vpcKey], []string{vpcPattern})
}

// foreignPatterns are the reserved prefixes the NodeENI controller never
// sets: all but its own and the VPC CNI's (for no_manage).
func foreignPatterns() []string {
	var out []string
	for _, p := range tagkeys.Prefixes() {
		if p != tagkeys.NodeENIPrefix && !strings.HasPrefix(eniplan.TagNoManage, p) {
			out = append(out, p+"*")
		}
	}
	return out
}

// Every write grant of the NodeENI document names one resource type and
// carries the condition for it: ENIs the cluster's tag (on the request
// at creation, on the resource afterwards) or tag-on-create, with the
// tag keys limited; subnets and security groups the cluster's VPC;
// instances the cluster's node tag. A companion grant (subnet, security
// group, instance) is also granted on the cluster's ENIs: EC2 authorizes
// every resource of a call, so it never suffices alone.
func TestNodeENIWritesAreScopedOnEveryResource(t *testing.T) {
	p := load(t, "nodeeni.json", "")
	owned := map[string]bool{} // actions granted on the cluster's ENIs
	companions := map[string]string{}
	for _, st := range p.Statement {
		var mutating []string
		for _, a := range st.Action {
			if !strings.HasPrefix(a, "ec2:Describe") && !strings.HasPrefix(a, "ec2:Get") {
				mutating = append(mutating, a)
			}
		}
		switch {
		case st.Effect != "Allow":
			t.Errorf("%s: the NodeENI document only grants", st.Sid)
			continue
		case len(mutating) == 0:
			continue
		case len(st.Resource) != 1:
			t.Errorf("%s: %v on %v: one resource type per write grant, each with its condition", st.Sid, mutating, st.Resource)
			continue
		}
		switch st.Resource[0] {
		case eniARN:
			if checkENIGrant(t, st, mutating) {
				for _, a := range mutating {
					owned[a] = true
				}
			}
			continue
		case reservationARN:
			if checkReservationGrant(t, st, mutating) {
				for _, a := range mutating {
					owned[a] = true
				}
			}
			continue
		case "arn:aws:ec2:*:*:subnet/*", "arn:aws:ec2:*:*:security-group/*":
			if !inClusterVPC(st) || len(st.Condition) != 1 {
				t.Errorf("%s: %v on %s must be conditioned on the cluster's VPC alone (%s %s %s), has %v",
					st.Sid, mutating, st.Resource[0], vpcOp, vpcKey, vpcPattern, st.Condition)
			}
		case "arn:aws:ec2:*:*:instance/*":
			key := "aws:ResourceTag/kubernetes.io/cluster/" + nodesPlaceholder
			if !slices.Equal(st.Condition["StringEquals"][key], []string{"owned"}) || len(st.Condition) != 1 {
				t.Errorf("%s: %v on instances must be conditioned on %s = owned alone, has %v", st.Sid, mutating, key, st.Condition)
			}
		default:
			t.Errorf("%s: %v on %s, which no NodeENI call touches", st.Sid, mutating, st.Resource[0])
		}
		for _, a := range mutating {
			companions[a] = st.Sid
		}
	}
	for a, sid := range companions {
		if !owned[a] {
			t.Errorf("%s: %s on companion resources, but not also limited to the cluster's ENIs", sid, a)
		}
	}
}

// checkReservationGrant checks a grant on subnet CIDR reservations (the
// pods' ranges): the cluster's tag on the request (create, tags at
// creation) or on the reservation (delete), nothing else.
func checkReservationGrant(t *testing.T, st Statement, mutating []string) bool {
	t.Helper()
	eq := st.Condition["StringEquals"]
	onRequest := slices.Equal(eq["aws:RequestTag/"+eniplan.TagCluster], []string{placeholder})
	onResource := slices.Equal(eq["aws:ResourceTag/"+eniplan.TagCluster], []string{placeholder})
	if len(st.Condition) != 1 || onRequest == onResource {
		t.Errorf("%s: %v on reservations must be conditioned on the cluster's tag (request or resource) alone, has %v", st.Sid, mutating, st.Condition)
		return false
	}
	if slices.Contains(mutating, createTags) && !slices.Equal(eq["ec2:CreateAction"], []string{"CreateSubnetCidrReservation"}) {
		t.Errorf("%s: tags on reservations only with their creation (ec2:CreateAction), has %v", st.Sid, st.Condition)
		return false
	}
	return true
}

// checkENIGrant checks a grant on network interfaces: scoped to the
// cluster (request tag, resource tag or tag-on-create), and, when it
// writes tags, limited in the keys it may write.
func checkENIGrant(t *testing.T, st Statement, mutating []string) bool {
	t.Helper()
	eq := st.Condition["StringEquals"]
	scoped := slices.Equal(eq["aws:ResourceTag/"+eniplan.TagCluster], []string{placeholder}) ||
		slices.Equal(eq["aws:RequestTag/"+eniplan.TagCluster], []string{placeholder}) ||
		(len(eq[createActn]) > 0 && !slices.Contains(eq[createActn], "*"))
	if !scoped || len(eq) != 1 {
		t.Errorf("%s: %v on ENIs must be conditioned (StringEquals) on %s = %s or on %s; has %v",
			st.Sid, mutating, eniplan.TagCluster, placeholder, createActn, st.Condition)
		return false
	}
	// Once an ENI exists, the cluster's tag is not enough: anyone allowed
	// ec2:CreateTags can copy it onto an ENI of another VPC.
	if len(eq[createActn]) == 0 && len(eq["aws:RequestTag/"+eniplan.TagCluster]) == 0 && !inClusterVPC(st) {
		t.Errorf("%s: %v on existing ENIs must also be conditioned on the cluster's VPC (%s %s)", st.Sid, mutating, vpcOp, vpcKey)
	}
	writesTags := slices.Contains(mutating, createTags) || slices.Contains(mutating, "ec2:CreateNetworkInterface")
	if !writesTags {
		if len(st.Condition) != 2 {
			t.Errorf("%s: unexpected conditions %v", st.Sid, st.Condition)
		}
		return true
	}
	notLike := st.Condition["ForAllValues:StringNotLike"][tagKeys]
	proofOnly := slices.Equal(st.Condition["ForAllValues:StringEquals"][tagKeys], []string{eniplan.TagProof})
	for _, f := range foreignPatterns() {
		if !proofOnly && !slices.Contains(notLike, f) {
			t.Errorf("%s: %v may write keys matching %s (ForAllValues:StringNotLike %s lists %v)", st.Sid, mutating, f, tagKeys, notLike)
		}
	}
	return true
}

func TestChartShipsTheDocuments(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(docsDir, "*.json"))
	chart, _ := filepath.Glob(filepath.Join(chartDir, "*.json"))
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(base(docs), base(chart)) || len(docs) == 0 {
		t.Fatalf("docs/iam has %v, the chart's files/iam %v: run make chart-sync", base(docs), base(chart))
	}
	for _, d := range docs {
		a, _ := os.ReadFile(d)
		b, err := os.ReadFile(filepath.Join(chartDir, filepath.Base(d)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("charts/eni-operator/files/iam/%s differs from docs/iam: run make chart-sync", filepath.Base(d))
		}
	}
}

// --- Evaluation: what the documents allow, alone and together. ---

const (
	podENI   = "arn:aws:ec2:eu-west-1:111122223333:network-interface/eni-0pod"
	ownENI   = "arn:aws:ec2:eu-west-1:111122223333:network-interface/eni-0own"
	otherENI = "arn:aws:ec2:eu-west-1:111122223333:network-interface/eni-0other"
	newENI   = "arn:aws:ec2:eu-west-1:111122223333:network-interface/*"
	instance = "arn:aws:ec2:eu-west-1:111122223333:instance/i-0node"
	subnet   = "arn:aws:ec2:eu-west-1:111122223333:subnet/subnet-0a"
	secGroup = "arn:aws:ec2:eu-west-1:111122223333:security-group/sg-0a"
	// Resources outside the cluster: another VPC's, another cluster's
	// instance, an instance without tags.
	foreignENI    = "arn:aws:ec2:eu-west-1:111122223333:network-interface/eni-0vpc2"
	otherSubnet   = "arn:aws:ec2:eu-west-1:111122223333:subnet/subnet-0vpc2"
	otherSG       = "arn:aws:ec2:eu-west-1:111122223333:security-group/sg-0vpc2"
	otherInstance = "arn:aws:ec2:eu-west-1:111122223333:instance/i-0other"
	bareInstance  = "arn:aws:ec2:eu-west-1:111122223333:instance/i-0bare"
	// The start-up check's placeholders (internal/ec2): no such resources.
	dryRunENI    = "arn:aws:ec2:eu-west-1:111122223333:network-interface/eni-00000000000000000"
	dryRunSubnet = "arn:aws:ec2:eu-west-1:111122223333:subnet/subnet-00000000000000000"
	dryRunSG     = "arn:aws:ec2:eu-west-1:111122223333:security-group/sg-00000000000000000"
)

// resourceTags are the tags each resource carries in the scenarios.
var resourceTags = map[string]map[string]string{
	podENI:        {"Team": "shop"},
	ownENI:        {eniplan.TagCluster: cluster, eniplan.TagNode: "node-1", eniplan.TagNoManage: "true"},
	otherENI:      {eniplan.TagCluster: "staging"},
	foreignENI:    {eniplan.TagCluster: cluster, "Team": "shop"},
	instance:      {nodeTag: "owned", "eks:cluster-name": eksName},
	otherInstance: {"kubernetes.io/cluster/staging": "owned"},
}

// resourceVPC is each resource's VPC, EC2's ec2:Vpc (instances have none
// as a condition key).
var resourceVPC = map[string]string{
	podENI: clusterVPC, ownENI: clusterVPC, otherENI: clusterVPC, subnet: clusterVPC, secGroup: clusterVPC,
	foreignENI: otherVPC, otherSubnet: otherVPC, otherSG: otherVPC,
}

// on builds the request for an action on a resource with tag keys.
func on(action, resource string, keys ...string) Request {
	ctx := map[string][]string{}
	for k, v := range resourceTags[resource] {
		ctx["aws:ResourceTag/"+k] = []string{v}
	}
	if vpc, ok := resourceVPC[resource]; ok {
		ctx[vpcKey] = []string{vpc}
	}
	if keys != nil {
		ctx[tagKeys] = keys
	}
	return Request{Action: action, Resource: resource, Context: ctx}
}

// createENI is the authorization of one CreateNetworkInterface with
// TagSpecifications in the cluster's subnet with its security group.
func createENI(tags map[string]string) []Request { return createENIIn(tags, subnet, secGroup) }

// createENIIn is the authorization of one CreateNetworkInterface with
// TagSpecifications: the call on the new ENI (request tags), its subnet
// and security group, and CreateTags with ec2:CreateAction.
func createENIIn(tags map[string]string, inSubnet, withGroup string) []Request {
	ctx := map[string][]string{}
	var keys []string
	for k, v := range tags {
		ctx["aws:RequestTag/"+k] = []string{v}
		keys = append(keys, k)
	}
	ctx[tagKeys] = keys
	tagCtx := map[string][]string{createActn: {"CreateNetworkInterface"}}
	for k, v := range ctx {
		tagCtx[k] = v
	}
	return []Request{
		{Action: "ec2:CreateNetworkInterface", Resource: newENI, Context: ctx},
		on("ec2:CreateNetworkInterface", inSubnet),
		on("ec2:CreateNetworkInterface", withGroup),
		{Action: createTags, Resource: newENI, Context: tagCtx},
	}
}

type scenario struct {
	name string
	reqs []Request
	// want per attachment: tagger alone, NodeENI alone, both on one role.
	tagger, nodeENI, both Decision
}

func scenarios(t *testing.T) []scenario {
	ownership := map[string]string{
		eniplan.TagCluster: cluster, eniplan.TagNodeENI: "multus", eniplan.TagNodeENIUID: "uid",
		eniplan.TagNode: "node-1", eniplan.TagInstance: "i-0node", eniplan.TagCreatedAt: "2026-01-01T00:00:00Z",
		eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1", eniplan.TagNoManage: "true", "Team": "net",
	}
	foreign := with(ownership, eniplan.TagCluster, "staging")
	untagged := with(ownership, eniplan.TagCluster, "")
	D, A, I := ExplicitDeny, Allowed, ImplicitDeny
	s := []scenario{
		// The tagger's own calls.
		{"tagger: describe", []Request{{Action: "ec2:DescribeNetworkInterfaces", Resource: "*"}}, A, A, A},
		{"tagger: first tags and token", []Request{on(createTags, podENI, "Team", "CostCenter", tagger.HashTag)}, A, I, A},
		{"tagger: remove a tag and the token", []Request{on(deleteTags, podENI, "Team", tagger.HashTag)}, A, I, A},
		// The start-up DryRun names a placeholder ENI that does not exist,
		// so EC2 knows no VPC for it.
		{"tagger: start-up DryRun CreateTags", []Request{on(createTags, dryRunENI, "eni-operator/permission-check")}, A, I, A},
		{"tagger: start-up DryRun DeleteTags", []Request{on(deleteTags, dryRunENI, "eni-operator/permission-check")}, A, I, A},
		{"tagger: tags on an instance", []Request{on(createTags, instance, "Team")}, I, I, I},
		{"tagger: tags on an ENI of another VPC", []Request{on(createTags, foreignENI, "Team")}, I, I, I},
		// Forging and stripping ownership.
		{"forge the cluster tag on a pod's ENI", []Request{on(createTags, podENI, eniplan.TagCluster)}, D, I, D},
		{"forge the cluster tag on another cluster's ENI", []Request{on(createTags, otherENI, eniplan.TagCluster)}, D, I, D},
		// After creation the NodeENI document lets the controller write
		// user tags and its proof alone on its own ENIs, no other
		// ownership key.
		{"rewrite an ownership tag of the cluster's ENI", []Request{on(createTags, ownENI, eniplan.TagNode)}, D, I, D},
		{"rewrite an ownership tag with the proof", []Request{on(createTags, ownENI, eniplan.TagProof, eniplan.TagNode)}, D, I, D},
		{"rewrite the proof and a user tag in one call", []Request{on(createTags, ownENI, eniplan.TagProof, "Team")}, D, I, D},
		{"nodeeni: sign its ENI (proof alone)", []Request{on(createTags, ownENI, eniplan.TagProof)}, A, A, A},
		// The tagger's grant reaches the proof key on any ENI of the VPC
		// (IAM has no "all of eni-operator.io/ but proof"); a proof is an
		// HMAC only the operator's key makes, and an ENI without the
		// cluster's tag is never the controller's, so it unlocks nothing.
		{"the proof alone on a pod's ENI", []Request{on(createTags, podENI, eniplan.TagProof)}, A, I, A},
		{"strip the cluster tag of the cluster's ENI", []Request{on(deleteTags, ownENI, eniplan.TagCluster)}, D, I, D},
		{"strip no_manage", []Request{on(deleteTags, ownENI, eniplan.TagNoManage)}, D, I, D},
		{"delete every tag (no keys)", []Request{on(deleteTags, podENI)}, D, I, D},
		{"delete every tag of the cluster's ENI (no keys)", []Request{on(deleteTags, ownENI)}, D, I, D},
		// The NodeENI controller's calls.
		{"nodeeni: create an ENI with its ownership tags", createENI(ownership), I, A, A},
		{"nodeeni: create without the cluster tag", createENI(untagged), I, I, I},
		{"nodeeni: create for another cluster", createENI(foreign), I, I, I},
		{"nodeeni: attach its ENI", []Request{on("ec2:AttachNetworkInterface", ownENI), on("ec2:AttachNetworkInterface", instance)}, I, A, A},
		{"nodeeni: detach its ENI", []Request{on("ec2:DetachNetworkInterface", ownENI), on("ec2:DetachNetworkInterface", instance)}, I, A, A},
		{"nodeeni: delete its ENI", []Request{on("ec2:DeleteNetworkInterface", ownENI)}, I, A, A},
		{"nodeeni: set its ENI's groups", []Request{on("ec2:ModifyNetworkInterfaceAttribute", ownENI), on("ec2:ModifyNetworkInterfaceAttribute", secGroup)}, I, A, A},
		{"nodeeni: user tags on its ENI", []Request{on(createTags, ownENI, "Team")}, A, A, A},
		{"nodeeni: remove a user tag from its ENI", []Request{on(deleteTags, ownENI, "Team")}, A, A, A},
		{"nodeeni: remove a user tag from another cluster's ENI", []Request{on(deleteTags, otherENI, "Team")}, A, I, A},
		{"detach a foreign ENI", []Request{on("ec2:DetachNetworkInterface", otherENI), on("ec2:DetachNetworkInterface", instance)}, I, I, I},
		{"delete a pod's ENI", []Request{on("ec2:DeleteNetworkInterface", podENI)}, I, I, I},
		{"attach a foreign ENI", []Request{on("ec2:AttachNetworkInterface", otherENI), on("ec2:AttachNetworkInterface", instance)}, I, I, I},
	}
	// Every reserved prefix, derived from tagkeys: a prefix added there
	// and not to the document fails here too.
	for _, p := range tagkeys.Prefixes() {
		if p == ownPrefix(t) {
			continue
		}
		key := p + "x"
		s = append(s,
			scenario{"forge " + key + " on a pod's ENI", []Request{on(createTags, podENI, "Team", key)}, D, I, D},
			scenario{"strip " + key + " from a pod's ENI", []Request{on(deleteTags, podENI, key)}, D, I, D},
		)
	}
	return s
}

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for kk, vv := range m {
		out[kk] = vv
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func TestPoliciesDecideTheOperatorsRequests(t *testing.T) {
	tg := load(t, "tagger.json", cluster)
	ne := load(t, "nodeeni.json", cluster)
	for _, sc := range scenarios(t) {
		for _, c := range []struct {
			role     string
			policies []Policy
			want     Decision
		}{
			{"tagger alone", []Policy{tg}, sc.tagger},
			{"NodeENI alone", []Policy{ne}, sc.nodeENI},
			{"both on one role", []Policy{tg, ne}, sc.both},
		} {
			got, err := Evaluate(c.policies, sc.reqs...)
			if err != nil {
				t.Fatalf("%s, %s: %v", sc.name, c.role, err)
			}
			if got != c.want {
				t.Errorf("%s, %s: %v, want %v", sc.name, c.role, got, c.want)
			}
		}
	}
}

// The evaluator itself, on the semantics the documents rely on.
func TestEvaluatorSemantics(t *testing.T) {
	for _, c := range []struct {
		op        string
		want      []string
		have      []string
		present   bool
		wantMatch bool
	}{
		{"StringNotEquals", []string{"prod"}, nil, false, true}, // missing key: negated operator true
		{"StringEquals", []string{"prod"}, nil, false, false},   // missing key: positive operator false
		{"StringNotEquals", []string{"prod"}, []string{"prod"}, true, false},
		{"ForAnyValue:StringLike", []string{"eks:*"}, nil, false, false},
		{"ForAnyValue:StringLike", []string{"eks:*"}, []string{"Team", "eks:x"}, true, true},
		{"ForAnyValue:StringLike", []string{"eks:*"}, []string{"EKS:x"}, true, false}, // case-sensitive
		{"Null", []string{"true"}, nil, false, true},
		{"Null", []string{"true"}, []string{"CreateNetworkInterface"}, true, false},
		// ForAllValues: true on a missing or empty key; every value must
		// match one of the list (positive) or none of it (negated).
		{"ForAllValues:StringEquals", []string{"a", "b"}, nil, false, true},
		{"ForAllValues:StringEquals", []string{"a", "b"}, []string{"a", "b"}, true, true},
		{"ForAllValues:StringEquals", []string{"a"}, []string{"a", "c"}, true, false},
		{"ForAllValues:StringNotLike", []string{"eks:*", "k8s.io/*"}, []string{"Team", "Cost"}, true, true},
		{"ForAllValues:StringNotLike", []string{"eks:*", "k8s.io/*"}, []string{"Team", "k8s.io/x"}, true, false},
		// ForAnyValue with a negated operator: some value matches none.
		{"ForAnyValue:StringNotEquals", []string{"p"}, []string{"p"}, true, false},
		{"ForAnyValue:StringNotEquals", []string{"p"}, []string{"p", "q"}, true, true},
		{"ForAnyValue:StringNotEquals", []string{"p"}, nil, false, false},
		// ArnLike: parts matched separately, * never spans a colon.
		{"ArnLike", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, []string{"arn:aws:ec2:eu-west-1:111122223333:vpc/vpc-1"}, true, true},
		{"ArnLike", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, []string{"arn:aws:ec2:eu-west-1:111122223333:vpc/vpc-2"}, true, false},
		{"ArnLike", []string{"arn:aws:ec2:*:vpc/vpc-1"}, []string{"arn:aws:ec2:eu-west-1:111122223333:vpc/vpc-1"}, true, false},
		{"ArnLike", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, []string{"vpc-1"}, true, false},
		{"ArnLike", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, nil, false, false},
		// ...IfExists: true when the key is missing, else the operator.
		{"ArnLikeIfExists", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, nil, false, true},
		{"ArnLikeIfExists", []string{"arn:aws:ec2:*:*:vpc/vpc-1"}, []string{"arn:aws:ec2:eu-west-1:1:vpc/vpc-2"}, true, false},
		{"StringEqualsIfExists", []string{"x"}, []string{"x"}, true, true},
	} {
		got, err := condition(c.op, c.want, c.have, c.present)
		if err != nil || got != c.wantMatch {
			t.Errorf("%s %v against %v (present %v) = %v, %v; want %v", c.op, c.want, c.have, c.present, got, err, c.wantMatch)
		}
	}
	for _, op := range []string{"StringEqualsIgnoreCase", "ForOneValue:StringEquals", "ForAllValues:StringLikeIfExists"} {
		if _, err := condition(op, []string{"x"}, nil, false); err == nil {
			t.Errorf("%s: an operator the evaluator does not model must fail", op)
		}
	}
}

// The operator's start-up check must agree with the document: every
// action it verifies with a DryRun (the creates carrying the cluster's
// tag, placeholder resources without tags) is allowed, so a correct role
// never reports a missing permission; and every action it leaves to first
// use is one the document scopes to the cluster's own ENIs, which a DryRun
// against an untagged placeholder could not show.
func TestStartUpCheckAgreesWithTheDocument(t *testing.T) {
	tg := load(t, "tagger.json", cluster)
	ne := load(t, "nodeeni.json", cluster)
	const placeholder = dryRunENI
	// The placeholder subnet and group do not exist: EC2 knows no VPC
	// for them (ec2:Vpc missing), so this also checks the IfExists.
	dryRun := map[string][]Request{
		"ec2:CreateNetworkInterface": createENIIn(map[string]string{eniplan.TagCluster: cluster}, dryRunSubnet, dryRunSG),
	}
	for _, a := range nodeeni.PreflightIAMActions() {
		reqs, ok := dryRun[a]
		if !ok {
			if !strings.HasPrefix(a, "ec2:Describe") {
				t.Fatalf("%s: no DryRun request modelled for a checked action", a)
			}
			reqs = []Request{{Action: a, Resource: "*"}}
		}
		for _, policies := range [][]Policy{{ne}, {tg, ne}} {
			if got, err := Evaluate(policies, reqs...); err != nil || got != Allowed {
				t.Errorf("start-up DryRun of %s: %v %v, want allowed: the check would report a correct role as lacking it", a, got, err)
			}
		}
	}
	for _, a := range nodeeni.ScopedIAMActions() {
		keys := []string(nil)
		if a == createTags || a == deleteTags {
			keys = []string{"Team"}
		}
		onPlaceholder := Request{Action: a, Resource: placeholder, Context: map[string][]string{}}
		if keys != nil {
			onPlaceholder.Context[tagKeys] = keys
		}
		if got, _ := Evaluate([]Policy{ne}, onPlaceholder); got == Allowed {
			t.Errorf("%s is allowed on an untagged ENI: the start-up check could verify it, so it should (move it to PreflightIAMActions)", a)
		}
		if got, _ := Evaluate([]Policy{ne}, on(a, ownENI, keys...)); got != Allowed {
			t.Errorf("%s on the cluster's own ENI: %v, want allowed", a, got)
		}
	}
	if got := len(nodeeni.PreflightIAMActions()) + len(nodeeni.ScopedIAMActions()); got != len(nodeeni.RequiredIAMActions()) {
		t.Errorf("preflight and scoped actions (%d) do not make up RequiredIAMActions (%d)", got, len(nodeeni.RequiredIAMActions()))
	}
}

// Each placeholder a document holds is one the README's sed commands
// fill, so a user who follows them creates a policy with none left.
func TestPlaceholdersAreDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(docsDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tagger.json", "nodeeni.json"} {
		raw, _ := os.ReadFile(filepath.Join(docsDir, name))
		for _, ph := range []string{placeholder, vpcPlaceholder, nodesPlaceholder} {
			if !bytes.Contains(raw, []byte(ph)) {
				continue
			}
			if !bytes.Contains(readme, []byte("s/"+ph+"/")) || !bytes.Contains(readme, []byte("`"+ph+"`")) {
				t.Errorf("%s holds %s; docs/iam/README.md neither explains it nor fills it in its sed commands", name, ph)
			}
		}
	}
}

// The pods' ranges: nodeeni.json lets the operator reserve only with the
// cluster's tag and in the cluster's VPC, and delete only reservations
// carrying the cluster's tag.
func TestPodRangeGrants(t *testing.T) {
	ne := load(t, "nodeeni.json", cluster)
	const (
		newRes   = "arn:aws:ec2:eu-west-1:111122223333:subnet-cidr-reservation/*"
		ownRes   = "arn:aws:ec2:eu-west-1:111122223333:subnet-cidr-reservation/scr-0own"
		otherRes = "arn:aws:ec2:eu-west-1:111122223333:subnet-cidr-reservation/scr-0other"
	)
	resourceTags[ownRes] = map[string]string{eniplan.TagCluster: cluster}
	resourceTags[otherRes] = map[string]string{eniplan.TagCluster: "staging"}
	t.Cleanup(func() { delete(resourceTags, ownRes); delete(resourceTags, otherRes) })
	create := func(in string, tags map[string]string) []Request {
		ctx := map[string][]string{}
		for k, v := range tags {
			ctx["aws:RequestTag/"+k] = []string{v}
			ctx[tagKeys] = append(ctx[tagKeys], k)
		}
		tagCtx := map[string][]string{"ec2:CreateAction": {"CreateSubnetCidrReservation"}}
		for k, v := range ctx {
			tagCtx[k] = v
		}
		return []Request{{Action: "ec2:CreateSubnetCidrReservation", Resource: newRes, Context: ctx}, on("ec2:CreateSubnetCidrReservation", in),
			{Action: createTags, Resource: newRes, Context: tagCtx}}
	}
	own := map[string]string{eniplan.TagCluster: cluster, eniplan.TagProof: "v1.k.x"}
	for _, c := range []struct {
		what string
		reqs []Request
		want bool
	}{
		{"reserve with the cluster's tag in its subnet", create(subnet, own), true},
		{"reserve in another VPC's subnet", create(otherSubnet, own), false},
		{"reserve without the cluster's tag", create(subnet, map[string]string{"Team": "net"}), false},
		{"reserve with another cluster's tag", create(subnet, map[string]string{eniplan.TagCluster: "staging"}), false},
		{"delete its own reservation", []Request{on("ec2:DeleteSubnetCidrReservation", ownRes)}, true},
		{"delete another cluster's reservation", []Request{on("ec2:DeleteSubnetCidrReservation", otherRes)}, false},
		{"tag a reservation after its creation", []Request{on(createTags, ownRes, "Team")}, false},
	} {
		got, err := Evaluate([]Policy{ne}, c.reqs...)
		if err != nil {
			t.Fatal(err)
		}
		if (got == Allowed) != c.want {
			t.Errorf("%s: %v, want allowed %v", c.what, got, c.want)
		}
	}
}
