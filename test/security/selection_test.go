package security

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// TestIssue36TagsDoNotSteerRunningENIs replays, on the whole operator,
// issue 36's finding 3: a principal with only ec2:CreateTags in the
// cluster's VPC tags a wide-open security group to match the NodeENI's
// securityGroupSelector, and copies the Name tag its subnetNames uses
// onto another subnet of the zone. Before: the group was added to the
// running ENI (ModifyNetworkInterfaceAttribute) and a second ENI was
// created and attached in the other subnet.
//
// Must hold after several inventory refreshes: no call adds the group to
// an ENI, no ENI is created in the other subnet, the running ENI is
// attached as before with its groups, and the NodeENI says what changed.
func TestIssue36TagsDoNotSteerRunningENIs(t *testing.T) {
	ctx := context.Background()
	world := testenv.DefaultWorld(testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"),
		testenv.WithSecurityGroups("wide-open"))
	world.SecurityGroups[0].Tags = map[string]string{"net": "data"}
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, world)
	admin := emulator.NewAdminClient(e.URL)
	instance := e.World.Instances[0].ID
	attacker := e.Client(ec2.Config{VPCID: e.VPC, QPS: 1000, Burst: 1000})

	cl := operatorenv.NewOneNode(t, "prod", instance)
	testenv.UpdateNodeENISpec(t, cl.K8s, cl.NodeENI.Name, func(s *v1alpha1.NodeENISpec) {
		s.SecurityGroupNames = nil
		s.SecurityGroupSelector = []v1alpha1.SecurityGroupSelectorTerm{{Tags: map[string]v1alpha1.TagValue{"net": "data"}}}
	})
	oc := cl.Config(e.VPC)
	oc.NodeENI.CatalogInterval = time.Second
	oc.Registerer = prometheus.NewRegistry() // one operator after another in this process
	cl.Start(t, e.URL, oc)

	var own awstypes.ENI
	eventually(t, "the NodeENI's ENI attached", func() (bool, string) {
		enis, err := attacker.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{cl.Cluster}})
		if err != nil || len(enis) != 1 || enis[0].Attachment == nil || enis[0].Attachment.Status != "attached" {
			return false, fmt.Sprint(enis, err)
		}
		own = enis[0]
		return true, ""
	})
	wideOpen, pods := e.Groups["wide-open"], e.Subnets["pods"]
	for id, tags := range map[string]map[string]string{wideOpen: {"net": "data"}, pods: {"Name": "multus-a"}} {
		if err := attacker.CreateTags(ctx, id, tags); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the NodeENI says the selection changed", func() (bool, string) {
		c := meta.FindStatusCondition(testenv.GetNodeENI(t, cl.K8s, cl.NodeENI.Name).Status.Conditions, v1alpha1.ConditionSelectionChanged)
		return c != nil && c.Status == "True", fmt.Sprintf("%+v", c)
	})
	start := len(clusterListings(t, admin))
	eventually(t, "five more inventory refreshes", func() (bool, string) {
		n := len(clusterListings(t, admin)) - start
		return n >= 5, fmt.Sprintf("%d refreshes", n)
	})

	calls, err := admin.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		switch c.Action {
		case "ModifyNetworkInterfaceAttribute":
			for k, v := range c.Params {
				if slices.Contains(v, wideOpen) {
					t.Errorf("EC2 ModifyNetworkInterfaceAttribute added the tagged group (%s=%v)", k, v)
				}
			}
		case "CreateNetworkInterface":
			if slices.Contains(c.Params["SubnetId"], pods) && c.Params["DryRun"] == nil {
				t.Errorf("EC2 CreateNetworkInterface in the subnet the copied Name tag names: %v", c.Params)
			}
		}
	}
	after, err := attacker.GetENI(ctx, own.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := after.Attachment; a == nil || a.ID != own.Attachment.ID || !slices.Equal(after.SecurityGroups, own.SecurityGroups) {
		t.Errorf("the running ENI changed: attachment %+v groups %v, was %+v %v", a, after.SecurityGroups, own.Attachment, own.SecurityGroups)
	}
}
