package iam

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// The replay's world: the cluster's name, and the name in the
// kubernetes.io/cluster/<name>=owned tag its instances carry.
const (
	replayCluster = "prod"
	replayEKSName = "eks-prod"
)

// loadFilled reads a document strictly with its placeholders filled for
// a test world whose VPC ID is only known at run time.
func loadFilled(t *testing.T, name, clusterName, vpcID, nodes string) Policy {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(docsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte(placeholder), []byte(clusterName))
	raw = bytes.ReplaceAll(raw, []byte(vpcPlaceholder), []byte(vpcID))
	raw = bytes.ReplaceAll(raw, []byte(nodesPlaceholder), []byte(nodes))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// part is which part of the operator made a call, hence which document
// alone must allow it (an operator with only that part enabled has only
// that document).
type part int

const (
	partTagger part = iota
	partNodeENI
	// partEach: DescribeNetworkInterfaces, which each part makes (the
	// tagger to find pods' ENIs, the controller its own), so each
	// document alone must allow it.
	partEach
)

// partOf attributes a recorded call. The tagger's only writes are tags on
// pods' ENIs, which never carry the cluster's tag, and its start-up
// DryRun tag checks on a placeholder; every other write is the NodeENI
// controller's, whose tag writes name only ENIs carrying the cluster's
// tag.
func partOf(c emulator.Call) part {
	switch c.Action {
	case "DescribeNetworkInterfaces":
		return partEach
	case "CreateTags", "DeleteTags":
		for _, r := range c.Auth {
			if len(r.Context["aws:ResourceTag/"+eniplan.TagCluster]) > 0 || len(r.Context[createActn]) > 0 {
				return partNodeENI
			}
		}
		return partTagger
	}
	return partNodeENI
}

// modelled are the actions whose authorizations the emulator records; a
// call of one of them without any is a gap in the replay, not a pass.
func modelled(action string) bool {
	return strings.HasPrefix(action, "Describe") || slices.Contains([]string{"CreateNetworkInterface", "CreateTags",
		"DeleteTags", "AttachNetworkInterface", "DetachNetworkInterface", "DeleteNetworkInterface",
		"ModifyNetworkInterfaceAttribute", "CreateSubnetCidrReservation", "GetSubnetCidrReservations", "DeleteSubnetCidrReservation"}, action)
}

// denial is one recorded call the documents refuse.
type denial struct {
	call     emulator.Call
	role     string
	decision Decision
}

func (d denial) String() string {
	return fmt.Sprintf("%s %v (%s), %s: %v; authorizations %+v", d.call.Action, d.call.Params, d.call.Code, d.role, d.decision, d.call.Auth)
}

// replay evaluates every recorded call's authorizations under both
// documents on one role (docs/iam/README.md: "with both parts, attach
// both documents to the same role") and under the document of the part
// that made it alone, and returns the calls refused.
func replay(t *testing.T, calls []emulator.Call, tg, ne Policy) []denial {
	t.Helper()
	var out []denial
	for _, c := range calls {
		if !modelled(c.Action) {
			t.Fatalf("the operator called %s, whose authorizations the emulator does not record: extend internal/kit/emulator/authcontext.go", c.Action)
		}
		if len(c.Auth) == 0 {
			t.Fatalf("%s %v: no authorizations recorded", c.Action, c.Params)
		}
		for _, role := range rolesFor(partOf(c), tg, ne) {
			if d := decide(t, role.policies, c); d != Allowed {
				out = append(out, denial{call: c, role: role.name, decision: d})
			}
		}
	}
	return out
}

// role is one way of attaching the documents to the operator's role.
type role struct {
	name     string
	policies []Policy
}

func rolesFor(p part, tg, ne Policy) []role {
	both := role{"both documents on one role", []Policy{tg, ne}}
	taggerOnly, nodeENIOnly := role{"tagger.json alone", []Policy{tg}}, role{"nodeeni.json alone", []Policy{ne}}
	switch p {
	case partTagger:
		return []role{both, taggerOnly}
	case partNodeENI:
		return []role{both, nodeENIOnly}
	}
	return []role{both, taggerOnly, nodeENIOnly}
}

func decide(t *testing.T, policies []Policy, c emulator.Call) Decision {
	t.Helper()
	reqs := make([]Request, 0, len(c.Auth))
	for _, a := range c.Auth {
		reqs = append(reqs, Request{Action: a.Action, Resource: a.Resource, Context: a.Context})
	}
	d, err := Evaluate(policies, reqs...)
	if err != nil {
		t.Fatalf("%s: %v", c.Action, err)
	}
	return d
}

// operatorCalls runs the whole operator (pod tagger, NodeENI controller
// and collector, as the binary builds them) against the emulator through
// a NodeENI's whole life and a pod's tags, and returns every EC2 call it
// made with the authorizations the emulator recorded for each, and the
// world's VPC ID. The flows: the start-up DryRun checks; the NodeENI's
// ENI created with its ownership tags and spec.tags, signed (CreateTags
// of the proof), attached, DeleteOnTermination set; its security groups
// and spec.tags changed; the pod's ENI tagged and, the pod deleted,
// untagged; the pods' range reserved in the NodeENI's subnet; the NodeENI
// deleted, its ENI detached and deleted, its range deleted.
func operatorCalls(t *testing.T) ([]emulator.Call, string) {
	world := testenv.DefaultWorld(testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"),
		testenv.WithSecurityGroups("multus-b"), testenv.WithENIs(emulator.NetworkInterfaceSpec{Subnet: "pods",
			Tags: map[string]string{"Name": "pod-eni"}, Instance: testenv.NodeName(0), DeviceIndex: 2}))
	// The cluster's instances carry the tag nodeeni.json attaches by.
	world.Instances[0].Tags = map[string]string{"kubernetes.io/cluster/" + replayEKSName: "owned"}
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, world)
	e.Emulator.RecordAuth(true)
	instance, podENI := e.World.Instances[0].ID, e.World.NetworkInterfaces[0]

	cl := operatorenv.NewOneNode(t, replayCluster, instance)
	ctx, k8s := context.Background(), cl.K8s
	testenv.UpdateNodeENISpec(t, k8s, cl.NodeENI.Name, func(s *v1alpha1.NodeENISpec) {
		s.Tags = map[string]v1alpha1.TagValue{"Team": "net"}
		s.Multus = &v1alpha1.MultusSpec{PodAddressReservation: &v1alpha1.PodAddressReservationSpec{PrefixLength: 28}}
	})
	cl.Pod(t, "app", podENI.PrivateIP, "CostCenter=42")
	cl.Start(t, e.URL, cl.Config(e.VPC))
	// The test's own reads carry an access key of their own, so the
	// replay leaves them out.
	reader := ec2.NewFromAWSConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(e.URL),
		Credentials: credentials.NewStaticCredentialsProvider(observerKey, "x", "")}, ec2.Config{QPS: 1000, Burst: 1000, VPCID: e.VPC})

	own := waitOwnENI(t, cl, reader, func(n awstypes.ENI) bool { return n.Attachment != nil && n.Attachment.Status == "attached" })
	waitENI(t, reader, podENI.ID, "the pod's tags", func(n awstypes.ENI) bool {
		return n.Tags["CostCenter"] == "42" && n.Tags[tagger.HashTag] != ""
	})
	born := waitENI(t, reader, own, "the proof", func(n awstypes.ENI) bool { return n.Tags[eniplan.TagProof] != "" })
	// The proof rides in the create; CreateTags of the proof alone is the
	// restore of one removed from an ENI its ENINode entry vouches for.
	if err := reader.DeleteTags(ctx, own, map[string]string{eniplan.TagProof: born.Tags[eniplan.TagProof]}); err != nil {
		t.Fatal(err)
	}
	waitENI(t, reader, own, "the proof restored", func(n awstypes.ENI) bool { return n.Tags[eniplan.TagProof] != "" })
	podRanges := func() int {
		list, err := reader.ListSubnetCIDRReservations(ctx, e.Subnets["multus-a"])
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	testenv.Eventually(t, "the pods' range reserved", 60*time.Second, func() (bool, string) { n := podRanges(); return n == 1, fmt.Sprint(n) })

	testenv.UpdateNodeENISpec(t, k8s, cl.NodeENI.Name, func(s *v1alpha1.NodeENISpec) {
		s.SecurityGroupNames = []string{"multus", "multus-b"}
		s.Tags = map[string]v1alpha1.TagValue{"Team": "net", "Owner": "platform"}
	})
	waitENI(t, reader, own, "the new security groups and spec.tags", func(n awstypes.ENI) bool {
		return len(n.SecurityGroups) == 2 && n.Tags["Owner"] == "platform"
	})

	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: cl.AppsNS, Name: "app"}, pod); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitENI(t, reader, podENI.ID, "the pod's tags removed", func(n awstypes.ENI) bool {
		_, tagged := n.Tags["CostCenter"]
		return !tagged
	})

	if err := k8s.Delete(ctx, testenv.GetNodeENI(t, k8s, cl.NodeENI.Name)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the NodeENI's ENI deleted", 60*time.Second, func() (bool, string) {
		_, err := reader.GetENI(ctx, own)
		return err != nil, fmt.Sprintf("GetENI: %v", err)
	})
	testenv.Eventually(t, "the pods' range deleted", 60*time.Second, func() (bool, string) { n := podRanges(); return n == 0, fmt.Sprint(n) })
	var calls []emulator.Call
	for _, c := range e.Emulator.Calls() {
		if c.AccessKeyID != observerKey {
			calls = append(calls, c)
		}
	}
	return calls, e.VPC
}

// observerKey is the access key of the test's own EC2 reads.
const observerKey = "replay-observer"

// waitOwnENI waits until the NodeENI's ENI (the only ENI of the cluster)
// satisfies ok and the NodeENI is Ready, and returns its ID.
func waitOwnENI(t *testing.T, cl *operatorenv.OneNode, reader *ec2.Client, ok func(awstypes.ENI) bool) string {
	t.Helper()
	var own string
	testenv.Eventually(t, "the NodeENI's ENI", 60*time.Second, func() (bool, string) {
		var n v1alpha1.NodeENI
		if err := cl.K8s.Get(context.Background(), client.ObjectKeyFromObject(cl.NodeENI), &n); err != nil {
			return false, err.Error()
		}
		enis, err := reader.ListENIs(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, e := range enis {
			if e.Tags[eniplan.TagCluster] == cl.Cluster && ok(e) {
				own = e.ID
			}
		}
		return own != "" && meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady),
			fmt.Sprintf("own ENI %q, conditions %v", own, n.Status.Conditions)
	})
	return own
}

func waitENI(t *testing.T, reader *ec2.Client, id, what string, ok func(awstypes.ENI) bool) awstypes.ENI {
	t.Helper()
	var last awstypes.ENI
	testenv.Eventually(t, what+" on "+id, 60*time.Second, func() (bool, string) {
		n, err := reader.GetENI(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		last = n
		return ok(n), fmt.Sprintf("%+v", n)
	})
	return last
}

// Every EC2 call the operator makes through a NodeENI's life and a pod's
// tags is allowed by the shipped documents, replayed with the
// authorizations EC2 would evaluate (recorded by the emulator from its
// state at the time of each call): under both documents on one role, as
// docs/iam/README.md recommends, and under the document of the part that
// made it alone. And the replay can fail: without any one Allow statement
// the flows exercise, some call is refused.
func TestOperatorCallsAreAllowed(t *testing.T) {
	calls, vpcID := operatorCalls(t)
	tg := loadFilled(t, "tagger.json", replayCluster, vpcID, replayEKSName)
	ne := loadFilled(t, "nodeeni.json", replayCluster, vpcID, replayEKSName)
	checkFlowsCovered(t, calls)
	for _, d := range replay(t, calls, tg, ne) {
		t.Errorf("refused: %v", d)
	}

	t.Run("each statement is needed", func(t *testing.T) {
		for _, doc := range []struct {
			name string
			p    Policy
		}{{"tagger.json", tg}, {"nodeeni.json", ne}} {
			for i, st := range doc.p.Statement {
				if st.Effect != "Allow" {
					continue
				}
				cut := Policy{Version: doc.p.Version, Statement: slices.Delete(slices.Clone(doc.p.Statement), i, i+1)}
				tgCut, neCut := tg, ne
				if doc.name == "tagger.json" {
					tgCut = cut
				} else {
					neCut = cut
				}
				denied := replay(t, calls, tgCut, neCut)
				if len(denied) == 0 {
					t.Errorf("%s without %s: every call still allowed; the replay cannot tell it is needed", doc.name, st.Sid)
					continue
				}
				t.Logf("%s without %s: %d refusals, first: %v", doc.name, st.Sid, len(denied), denied[0])
			}
		}
	})
}

// checkFlowsCovered fails unless the log holds each call the flows are
// meant to make, so a replay that passes has judged them.
func checkFlowsCovered(t *testing.T, calls []emulator.Call) {
	t.Helper()
	want := map[string]func(emulator.Call) bool{
		"start-up DryRun CreateNetworkInterface": func(c emulator.Call) bool {
			return c.Action == "CreateNetworkInterface" && c.Code == "DryRunOperation"
		},
		"CreateNetworkInterface with ownership tags": func(c emulator.Call) bool {
			return c.Action == "CreateNetworkInterface" && c.Code == "" && has(c, "aws:RequestTag/"+eniplan.TagCluster)
		},
		"CreateTags of the proof": func(c emulator.Call) bool { return c.Action == "CreateTags" && keys(c, eniplan.TagProof) },
		"CreateTags of spec.tags": func(c emulator.Call) bool { return c.Action == "CreateTags" && keys(c, "Owner") },
		"AttachNetworkInterface":  func(c emulator.Call) bool { return c.Action == "AttachNetworkInterface" },
		"ModifyNetworkInterfaceAttribute DeleteOnTermination": func(c emulator.Call) bool {
			return c.Action == "ModifyNetworkInterfaceAttribute" && len(c.Params["Attachment.DeleteOnTermination"]) > 0
		},
		"ModifyNetworkInterfaceAttribute security groups": func(c emulator.Call) bool {
			return c.Action == "ModifyNetworkInterfaceAttribute" && len(c.Params["SecurityGroupId.2"]) > 0
		},
		"tagger CreateTags on the pod's ENI": func(c emulator.Call) bool {
			return c.Action == "CreateTags" && c.Code == "" && keys(c, "CostCenter")
		},
		"tagger DeleteTags on the pod's ENI": func(c emulator.Call) bool {
			return c.Action == "DeleteTags" && c.Code == "" && keys(c, "CostCenter")
		},
		"DetachNetworkInterface": func(c emulator.Call) bool { return c.Action == "DetachNetworkInterface" },
		"DeleteNetworkInterface": func(c emulator.Call) bool { return c.Action == "DeleteNetworkInterface" && c.Code == "" },
		"CreateSubnetCidrReservation with ownership tags": func(c emulator.Call) bool {
			return c.Action == "CreateSubnetCidrReservation" && c.Code == "" && has(c, "aws:RequestTag/"+eniplan.TagCluster)
		},
		"GetSubnetCidrReservations":   func(c emulator.Call) bool { return c.Action == "GetSubnetCidrReservations" },
		"DeleteSubnetCidrReservation": func(c emulator.Call) bool { return c.Action == "DeleteSubnetCidrReservation" && c.Code == "" },
	}
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.Action]++
		for what, match := range want {
			if match(c) {
				delete(want, what)
			}
		}
	}
	t.Logf("operator's EC2 calls replayed: %v", seen)
	for what := range want {
		t.Errorf("the flows made no %s: the replay did not judge it", what)
	}
}

func has(c emulator.Call, key string) bool {
	return slices.ContainsFunc(c.Auth, func(a emulator.AuthRequest) bool { return len(a.Context[key]) > 0 })
}

func keys(c emulator.Call, key string) bool {
	return slices.ContainsFunc(c.Auth, func(a emulator.AuthRequest) bool { return slices.Contains(a.Context[tagKeys], key) })
}
