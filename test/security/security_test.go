// Package security replays attacks on the whole operator — pod tagger,
// NodeENI controller and collector, built by operator.NewManager exactly
// as the binary builds it — and checks the outcome from the EC2
// emulator's state and its record of calls, never from the operator's
// own view.
package security

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// TestPodCannotMakeTheOperatorDetachOrDeleteItsENI replays the attack of
// issue 13: a pod whose IP is on a branch ENI asks, through its tag
// annotation, for the NodeENI controller's ownership tags (this
// cluster, a NodeENI's name and UID). Had the tagger written them, the
// controller would have taken the pod's ENI for one of its own that
// should not exist, detached and deleted it. A second pod, whose IP is
// the primary address of a plain ENI attached to the node (EC2 attaches
// branch ENIs only through a trunk), asks for every ownership tag the
// controller writes, down to the node, instance and device index, with a
// device-index base the NodeENI no longer has, so the controller would
// "replace" it. And an attacker who can tag
// ENIs directly pre-tags two ENIs of their own as the operator's (one
// complete down to the device index, one with the cluster tag only),
// each also carrying the tagger's token, hoping the controller adopts
// and attaches one or the collector deletes one.
//
// Must hold after several NodeENI resyncs and collector passes: the pods
// are told InvalidTags; their ENIs still exist, the attached one still
// attached where it was, with their original tags; the forged ENIs exist, unattached, with
// their tags; and EC2 saw no DetachNetworkInterface, DeleteNetworkInterface,
// AttachNetworkInterface, ModifyNetworkInterfaceAttribute, CreateTags or
// DeleteTags naming any of them. The NodeENI's own ENI is created and
// attached meanwhile, so the controller was really at work.
func TestPodCannotMakeTheOperatorDetachOrDeleteItsENI(t *testing.T) {
	ctx := context.Background()
	branchTags := map[string]string{"Name": "pod-branch", "vpcresources.k8s.aws/vlan-id": "7"}
	podENITags := map[string]string{"Name": "pod-eni"}
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a", "pods"), testenv.WithNodes(1, "m5.xlarge"), testenv.WithENIs(
			testenv.BranchENIs(1, branchTags), emulator.NetworkInterfaceSpec{Subnet: "pods", Tags: podENITags, Instance: testenv.NodeName(0), DeviceIndex: 2})))
	admin := emulator.NewAdminClient(e.URL)
	vpc, instance := e.VPC, e.World.Instances[0].ID
	branch, podENI := e.World.NetworkInterfaces[0], e.World.NetworkInterfaces[1]
	reader := e.Client(ec2.Config{QPS: 1000, Burst: 1000})
	podENIBefore := e.ENI(t, podENI.ID)
	if podENIBefore.Attachment == nil || podENIBefore.Attachment.InstanceID != instance {
		t.Fatalf("the pod's ENI is not attached to %s: %+v", instance, podENIBefore.Attachment)
	}

	cl := operatorenv.NewOneNode(t, "prod", instance)
	k8s, ne, cluster, node := cl.K8s, cl.NodeENI, cl.Cluster, cl.Node

	// The attacker's own ENIs, tagged straight in EC2 before the operator
	// starts: one a perfect copy of what the controller makes for this
	// NodeENI and node (created an hour ago), one with the cluster tag
	// only (an orphan to the collector). Both carry the tagger's token.
	token := map[string]string{tagger.HashTag: "0123456789abcdef"}
	fullForgery := map[string]string{eniplan.TagCluster: cluster, eniplan.TagNodeENI: ne.Name, eniplan.TagNodeENIUID: string(ne.UID),
		eniplan.TagNode: node, eniplan.TagInstance: instance, eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
		eniplan.TagCreatedAt: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), eniplan.TagNoManage: "true"}
	maps.Copy(fullForgery, token)
	orphanForgery := map[string]string{eniplan.TagCluster: cluster}
	maps.Copy(orphanForgery, token)
	forged, err := e.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		{Subnet: "multus-a", SecurityGroups: []string{"multus"}, Tags: fullForgery},
		{Subnet: "multus-a", SecurityGroups: []string{"multus"}, Tags: orphanForgery},
	}})
	if err != nil {
		t.Fatal(err)
	}
	forgedTags := map[string]map[string]string{forged.NetworkInterfaces[0].ID: fullForgery, forged.NetworkInterfaces[1].ID: orphanForgery}

	// The pods ask for the NodeENI's ownership tags on their ENIs.
	attack := fmt.Sprintf("%s=%s,%s=%s,%s=%s", eniplan.TagCluster, cluster, eniplan.TagNodeENI, ne.Name, eniplan.TagNodeENIUID, ne.UID)
	fullAttack := fmt.Sprintf(`{%q:%q,%q:%q,%q:%q,%q:%q,%q:%q,%q:"2",%q:"0",%q:"2020-01-01T00:00:00Z"}`,
		eniplan.TagCluster, cluster, eniplan.TagNodeENI, ne.Name, eniplan.TagNodeENIUID, ne.UID, eniplan.TagNode, node,
		eniplan.TagInstance, instance, eniplan.TagDeviceIndex, eniplan.TagDeviceIndexBase, eniplan.TagCreatedAt)
	pods := map[string]string{"attacker": attack, "attacker-full": fullAttack}
	ips := map[string]string{"attacker": branch.PrivateIP, "attacker-full": podENI.PrivateIP}
	for name, annotation := range pods {
		cl.Pod(t, name, ips[name], annotation)
	}

	// The whole operator, as the binary builds it, finding the emulator
	// the way it finds AWS.
	oc := cl.Config(vpc)
	reg := prometheus.NewRegistry()
	oc.Registerer = reg
	cl.Start(t, e.URL, oc)

	// The pods are refused, naming the reserved prefix.
	for name := range pods {
		eventually(t, "pod "+name+"'s InvalidTags condition", func() (bool, string) {
			var p corev1.Pod
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: cl.AppsNS, Name: name}, &p); err != nil {
				return false, err.Error()
			}
			for _, c := range p.Status.Conditions {
				if c.Type == tagger.ConditionType {
					ok := c.Status == corev1.ConditionFalse && c.Reason == tagger.ReasonInvalidTags &&
						strings.Contains(c.Message, "keys starting with eni-operator.io/ are reserved")
					return ok, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
				}
			}
			return false, "no condition"
		})
	}
	// The controller is at work: the NodeENI's own ENI is attached and
	// the NodeENI is Ready.
	var own string
	eventually(t, "the NodeENI's own ENI", func() (bool, string) {
		var n v1alpha1.NodeENI
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ne), &n); err != nil {
			return false, err.Error()
		}
		enis, err := reader.ListENIs(ctx)
		if err != nil {
			return false, err.Error()
		}
		own = ""
		for _, e := range enis {
			if _, isForged := forgedTags[e.ID]; !isForged && e.Tags[eniplan.TagCluster] == cluster &&
				e.Attachment != nil && e.Attachment.Status == "attached" && e.Attachment.DeviceIndex == 1 {
				own = e.ID
			}
		}
		return own != "" && meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.ConditionReady), fmt.Sprintf("own ENI %q, conditions %v", own, n.Status.Conditions)
	})
	// Several inventory refreshes (each a NodeENI resync and a collector
	// pass) after that.
	start := len(clusterListings(t, admin))
	eventually(t, "five more NodeENI inventory refreshes", func() (bool, string) {
		n := len(clusterListings(t, admin)) - start
		return n >= 5, fmt.Sprintf("%d refreshes", n)
	})

	// The pods' ENIs: still there, the attached one still attached where
	// it was, their tags as they were.
	after, err := reader.GetENI(ctx, branch.ID)
	if err != nil {
		t.Errorf("the pod's branch ENI is gone: %v", err)
	} else if !maps.Equal(after.Tags, branchTags) {
		t.Errorf("the pod's branch ENI's tags are %v, want %v", after.Tags, branchTags)
	}
	after, err = reader.GetENI(ctx, podENI.ID)
	if err != nil {
		t.Fatalf("the pod's attached ENI is gone: %v", err)
	}
	if a := after.Attachment; a == nil || a.InstanceID != instance || a.DeviceIndex != 2 || a.Status != "attached" || a.ID != podENIBefore.Attachment.ID {
		t.Errorf("the pod's ENI is no longer attached to %s at index 2 as before: %+v", instance, a)
	}
	if !maps.Equal(after.Tags, podENITags) {
		t.Errorf("the pod's attached ENI's tags are %v, want %v", after.Tags, podENITags)
	}
	// The forged ENIs: untouched, unattached.
	for id, want := range forgedTags {
		e, err := reader.GetENI(ctx, id)
		if err != nil {
			t.Errorf("forged ENI %s is gone: %v", id, err)
			continue
		}
		if e.Attachment != nil {
			t.Errorf("forged ENI %s was attached: %+v", id, e.Attachment)
		}
		if !maps.Equal(e.Tags, want) {
			t.Errorf("forged ENI %s tags %v, want %v", id, e.Tags, want)
		}
	}
	// And EC2 never heard a change to any of them.
	watched := map[string]string{branch.ID: "the pod's branch ENI", podENI.ID: "the pod's attached ENI",
		podENIBefore.Attachment.ID: "the pod's ENI's attachment"}
	for id := range forgedTags {
		watched[id] = "forged ENI"
	}
	calls, err := admin.Calls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	noWriteNames(t, calls, watched)
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.Action]++
	}
	t.Logf("EC2 calls: %v; %d NodeENI inventory refreshes", seen, len(clusterListings(t, admin)))
	if seen["AttachNetworkInterface"] == 0 {
		t.Error("no AttachNetworkInterface at all: the NodeENI controller did not do its work")
	}
	if g := testenv.MetricValue(t, reg, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": eniplan.UntrustedTaggerTag}); g < 2 {
		t.Errorf("untrusted ENIs with the tagger's tag: %v, want the 2 forged ones", g)
	}
}

// noWriteNames checks that no call that changes an ENI names one of
// watched (ID -> what it is).
func noWriteNames(t *testing.T, calls []emulator.Call, watched map[string]string) {
	t.Helper()
	changes := map[string]bool{"DetachNetworkInterface": true, "DeleteNetworkInterface": true, "AttachNetworkInterface": true,
		"ModifyNetworkInterfaceAttribute": true, "CreateTags": true, "DeleteTags": true}
	for _, c := range calls {
		if !changes[c.Action] {
			continue
		}
		for name, values := range c.Params {
			for _, v := range values {
				if what, ok := watched[v]; ok {
					t.Errorf("EC2 %s named %s %s (%s=%s)", c.Action, what, v, name, v)
				}
			}
		}
	}
}

// clusterListings are the recorded DescribeNetworkInterfaces calls that
// refreshed the cluster's ENIs in the operator's EC2 state.
func clusterListings(t *testing.T, admin *emulator.AdminClient) []emulator.Call {
	t.Helper()
	calls, err := admin.Calls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []emulator.Call
	for _, c := range calls {
		if c.Action == "DescribeNetworkInterfaces" && listsTheCluster(c.Params) {
			out = append(out, c)
		}
	}
	return out
}

// listsTheCluster reports whether a DescribeNetworkInterfaces reads every
// ENI of the cluster: a paginated listing (MaxResults) filtered on no more
// than the VPC and the cluster tag. The operator's EC2 state refreshes the
// cluster's ENIs either way (a refresh of the whole VPC covers them).
func listsTheCluster(params map[string][]string) bool {
	if len(params["MaxResults"]) == 0 {
		return false
	}
	for k, values := range params {
		if strings.HasPrefix(k, "Filter.") && strings.HasSuffix(k, ".Name") &&
			!slices.ContainsFunc(values, func(v string) bool { return v == "vpc-id" || v == "tag:"+eniplan.TagCluster }) {
			return false
		}
	}
	return true
}

func eventually(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, what, 45*time.Second, ok)
}
