package security

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// TestIssue25Attacks replays, on the whole operator, two attacks of the
// review in issue 25:
//   - the complete tag set of the operator's working ENI, proof included,
//     copied by someone allowed ec2:CreateTags onto three ENIs of their
//     own: one attached to the same node at a free index, a detached
//     duplicate, and a detached one with a backdated created-at. Before
//     proofs, the controller took the first over and deleted its own ENI
//     as a duplicate, and the collector deleted the others.
//   - a pod annotation smuggling reserved keys through NUL bytes, which
//     the tag-set encoding once split into separate tags.
//
// Must hold after several NodeENI resyncs and collector passes: EC2 saw
// no write naming a copy or the pod's ENI, the operator's ENI is still
// attached where it was, the copies are reported (CopiedNonce, BadProof), and the pod
// is told InvalidTags.
func TestIssue25Attacks(t *testing.T) {
	ctx := context.Background()
	branchTags := map[string]string{"Name": "pod-branch"}
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"), testenv.WithENIs(testenv.BranchENIs(1, branchTags))))
	admin := emulator.NewAdminClient(e.URL)
	vpc, instance := e.VPC, e.World.Instances[0].ID
	branch := e.World.NetworkInterfaces[0]
	reader := e.Client(ec2.Config{QPS: 1000, Burst: 1000})

	cl := operatorenv.NewOneNode(t, "prod", instance)
	smuggle := `{"A":"x\u0000eni-operator.io/cluster\u0000prod\u0000eni-operator.io/node\u0000n","D":"x\u0000Note"}`
	cl.Pod(t, "smuggler", branch.PrivateIP, smuggle)
	oc := cl.Config(vpc)
	reg := prometheus.NewRegistry()
	oc.Registerer = reg
	cl.Start(t, e.URL, oc)

	var own awstypes.ENI
	eventually(t, "the NodeENI's own ENI, attached and proven", func() (bool, string) {
		enis, err := reader.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{cl.Cluster}})
		if err != nil || len(enis) != 1 {
			return false, fmt.Sprint(enis, err)
		}
		own = enis[0]
		return own.Attachment != nil && own.Attachment.Status == "attached" && own.Tags[eniplan.TagProof] != "", fmt.Sprintf("%+v", own)
	})
	backdated := maps.Clone(own.Tags)
	backdated[eniplan.TagCreatedAt] = time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	copies, err := e.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "multus-a", SecurityGroups: []string{"multus"}, Tags: own.Tags, Instance: instance, DeviceIndex: 2},
		{Subnet: "multus-a", SecurityGroups: []string{"multus"}, Tags: own.Tags},
		{Subnet: "multus-a", SecurityGroups: []string{"multus"}, Tags: backdated},
	}})
	if err != nil {
		t.Fatal(err)
	}
	watched := map[string]string{branch.ID: "the smuggler's ENI"}
	for i, c := range copies.NetworkInterfaces {
		watched[c.ID] = fmt.Sprintf("copy %d", i)
	}

	eventually(t, "the smuggler's InvalidTags condition", func() (bool, string) {
		var p corev1.Pod
		if err := cl.K8s.Get(ctx, client.ObjectKey{Namespace: cl.AppsNS, Name: "smuggler"}, &p); err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == tagger.ConditionType {
				return c.Status == corev1.ConditionFalse && c.Reason == tagger.ReasonInvalidTags && strings.Contains(c.Message, "U+0000"),
					fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no condition"
	})
	start := len(clusterListings(t, admin))
	eventually(t, "five more NodeENI inventory refreshes", func() (bool, string) {
		n := len(clusterListings(t, admin)) - start
		return n >= 5, fmt.Sprintf("%d refreshes", n)
	})
	// The exact copies show the nonce the genuine ENI's record binds; the
	// backdated one's proof no longer verifies.
	copied := testenv.MetricValue(t, reg, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedCopied})
	bad := testenv.MetricValue(t, reg, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedBadProof})
	if copied != 2 || bad != 1 {
		t.Errorf("untrusted ENIs: %v CopiedNonce, %v BadProof; want the 2 exact copies and the backdated one", copied, bad)
	}
	after, err := reader.GetENI(ctx, own.ID)
	if err != nil {
		t.Fatalf("the operator's own ENI is gone: %v", err)
	}
	if a := after.Attachment; a == nil || a.ID != own.Attachment.ID || a.Status != "attached" {
		t.Errorf("the operator's own ENI is no longer attached as before: %+v", a)
	}
	if b, err := reader.GetENI(ctx, branch.ID); err != nil || !maps.Equal(b.Tags, branchTags) {
		t.Errorf("the smuggler's ENI: tags %v (%v), want %v", b.Tags, err, branchTags)
	}
	calls, err := admin.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	noWriteNames(t, calls, watched)
}
