// Package tagpolicy tests ENITagPolicies of NodeENI interfaces on the
// whole operator: the tagger's policy controller compiles them, the
// NodeENI controller tags the interfaces of the nodes they select.
package tagpolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// A policy with a nodeSelector tags the NodeENI interfaces of the nodes
// it selects when they are created (in the CreateNetworkInterface call,
// with expressions over the node), its defaults under the NodeENI's
// spec.tags and its enforced tags over them; a change of the policy
// reaches the interface already there, and its deletion takes away the
// tags only it gave.
func TestNodePolicyTagsNodeENIInterfaces(t *testing.T) {
	ctx := context.Background()
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a"), testenv.WithNodes(1, "m5.xlarge")))
	reader := e.Client(ec2.Config{QPS: 1000, Burst: 1000})
	cl := operatorenv.NewOneNode(t, "prod", e.World.Instances[0].ID)
	var ne v1alpha1.NodeENI
	if err := cl.K8s.Get(ctx, client.ObjectKey{Name: cl.NodeENI.Name}, &ne); err != nil {
		t.Fatal(err)
	}
	ne.Spec.Tags = map[string]v1alpha1.TagValue{"Team": "storage", "Zone": "mine"}
	if err := cl.K8s.Update(ctx, &ne); err != nil {
		t.Fatal(err)
	}
	value := func(v string) *v1alpha1.TagValue { tv := v1alpha1.TagValue(v); return &tv }
	policy := &v1alpha1.ENITagPolicy{ObjectMeta: metav1.ObjectMeta{Name: "node-zones"}, Spec: v1alpha1.ENITagPolicySpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "multus"}},
		Enforced:     []v1alpha1.TagRule{{Key: "Zone", Expression: "node.zone"}},
		Defaults:     []v1alpha1.TagRule{{Key: "Team", Value: value("network")}, {Key: "Host", Expression: "'n-' + node.name"}},
	}}
	if err := cl.K8s.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	cl.Start(t, e.URL, cl.Config(e.VPC))

	var own awstypes.ENI
	testenv.Eventually(t, "the NodeENI's interface with the policy's tags", 30*time.Second, func() (bool, string) {
		enis, err := reader.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{cl.Cluster}})
		if err != nil || len(enis) != 1 {
			return false, fmt.Sprint(enis, err)
		}
		own = enis[0]
		return own.Tags["Zone"] == "us-east-1a" && own.Tags["Team"] == "storage" && own.Tags["Host"] == "n-node-0", fmt.Sprint(own.Tags)
	})
	created := false
	for _, c := range e.Emulator.Calls() {
		if c.Action == "CreateNetworkInterface" && c.Code == "" && strings.Contains(fmt.Sprint(c.Params), "us-east-1a") {
			created = true
		}
	}
	if !created {
		t.Error("the policy's tags were not in the CreateNetworkInterface call: set after creation")
	}

	testenv.Eventually(t, "the policy Ready, saying what it tags", 30*time.Second, func() (bool, string) {
		var p v1alpha1.ENITagPolicy
		err := cl.K8s.Get(ctx, client.ObjectKey{Name: policy.Name}, &p)
		c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
		return err == nil && c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "NodeENI interfaces"), fmt.Sprint(c, err)
	})

	// The policy changes: the interface already there follows.
	if err := cl.K8s.Get(ctx, client.ObjectKey{Name: policy.Name}, policy); err != nil {
		t.Fatal(err)
	}
	policy.Spec.Enforced = append(policy.Spec.Enforced, v1alpha1.TagRule{Key: "Pool", Expression: "node.labels['role']"})
	if err := cl.K8s.Update(ctx, policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new enforced tag on the interface", 30*time.Second, func() (bool, string) {
		got, err := reader.GetENI(ctx, own.ID)
		return err == nil && got.Tags["Pool"] == "multus", fmt.Sprint(got.Tags, err)
	})

	// The policy goes: the tags only it gave leave the interface, the key
	// it enforced takes the spec's value back, and the spec's tags and a
	// tag the operator never wrote stay.
	if err := reader.CreateTags(ctx, own.ID, map[string]string{"Backup": "daily"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.K8s.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the policy's tags removed, the others kept", 30*time.Second, func() (bool, string) {
		got, err := reader.GetENI(ctx, own.ID)
		_, host := got.Tags["Host"]
		_, pool := got.Tags["Pool"]
		return err == nil && !host && !pool && got.Tags["Zone"] == "mine" && got.Tags["Team"] == "storage" && got.Tags["Backup"] == "daily",
			fmt.Sprint(got.Tags, err)
	})
}
