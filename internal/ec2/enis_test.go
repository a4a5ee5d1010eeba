package ec2

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The ENI lifecycle a NodeENI goes through, against the emulator.
func TestENILifecycle(t *testing.T) {
	w := newWorld(t, emulator.World{
		SecurityGroups: []emulator.SecurityGroupSpec{{Name: "multus", VPC: "main"}},
		Instances:      []emulator.InstanceSpec{{Type: "t3.micro", Subnet: "a"}},
	})
	c := w.client(t, Config{})
	ctx := context.Background()
	groups, err := c.SecurityGroups(ctx, Filter{Name: "group-name", Values: []string{"multus"}})
	if err != nil || len(groups) != 1 {
		t.Fatalf("security group by name: %v %v", groups, err)
	}
	subnets, err := c.Subnets(ctx, Filter{Name: "tag:Name", Values: []string{"a"}})
	if err != nil || len(subnets) != 1 || subnets[0].AvailabilityZone != "us-east-1a" {
		t.Fatalf("subnet by name: %v %v", subnets, err)
	}
	in := awstypes.CreateENIInput{SubnetID: subnets[0].ID, SecurityGroups: []string{groups[0].ID}, Description: "test",
		Tags: map[string]string{"owner": "test"}, ClientToken: "token-1"}
	e, err := c.CreateENI(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if e.Tags["owner"] != "test" || e.Status != "available" {
		t.Fatalf("created ENI %+v: want the tags at creation and status available", e)
	}
	again, err := c.CreateENI(ctx, in)
	if err != nil || again.ID != e.ID {
		t.Fatalf("same ClientToken: got %q, %v; want the same ENI %s", again.ID, err, e.ID)
	}
	types := c.NewInstanceTypes()
	for i := 0; i < 2; i++ {
		if n, err := types.MaxENIs(ctx, "t3.micro"); err != nil || n != 2 {
			t.Fatalf("MaxENIs(t3.micro) = %d, %v; want 2", n, err)
		}
	}
	if n := w.calls("DescribeInstanceTypes"); n != 1 {
		t.Fatalf("%d DescribeInstanceTypes calls, want 1 (cached)", n)
	}
	inst := w.loaded.Instances[0].ID
	attachment, err := c.AttachENI(ctx, e.ID, inst, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetDeleteOnTermination(ctx, e.ID, attachment, true); err != nil {
		t.Fatal(err)
	}
	// t3.micro takes 2 ENIs: a third does not fit.
	other, err := c.CreateENI(ctx, awstypes.CreateENIInput{SubnetID: subnets[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachENI(ctx, other.ID, inst, 2, 0); !IsLimitExceeded(err) {
		t.Fatalf("third ENI on a t3.micro: %v, want a limit error", err)
	}
	if err := c.DeleteENI(ctx, e.ID); !IsInUse(err) {
		t.Fatalf("deleting an attached ENI: %v, want InUse", err)
	}
	if err := c.DetachENI(ctx, attachment, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.GetENI(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "available" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ENI still %s after detach", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.DeleteENI(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetENI(ctx, e.ID); !IsNotFound(err) {
		t.Fatalf("deleted ENI: %v, want NotFound", err)
	}
}

// Missing IAM permissions are named exactly, from DryRun calls.
func TestCheckPermissions(t *testing.T) {
	w := newWorld(t, emulator.World{})
	c := w.client(t, Config{})
	all := []string{"ec2:DescribeNetworkInterfaces", "ec2:DescribeInstances", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
		"ec2:DescribeInstanceTypes", "ec2:CreateTags", "ec2:DeleteTags", "ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface",
		"ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute"}
	if err := c.CheckPermissions(context.Background(), all); err != nil {
		t.Fatalf("all permitted: %v", err)
	}
	if err := w.emu.Configure(emulator.Config{Denied: []string{"DeleteTags", "AttachNetworkInterface"}}); err != nil {
		t.Fatal(err)
	}
	err := c.CheckPermissions(context.Background(), all)
	if err == nil {
		t.Fatal("want an error naming the denied actions")
	}
	msg := err.Error()
	if !strings.Contains(msg, "ec2:DeleteTags, ec2:AttachNetworkInterface") || strings.Contains(msg, "ec2:CreateTags,") {
		t.Fatalf("error %q: want exactly ec2:DeleteTags and ec2:AttachNetworkInterface named", msg)
	}
	// Nothing was created or changed by the checks.
	if n := w.calls("CreateNetworkInterface"); n != 2 {
		t.Fatalf("%d CreateNetworkInterface calls, want the 2 DryRuns", n)
	}
	if enis, _ := c.ListENIs(context.Background()); len(enis) != 0 {
		t.Fatalf("DryRun created %d ENIs", len(enis))
	}
}

// A policy may allow creating only ENIs tagged for the cluster
// (aws:RequestTag), so the CreateNetworkInterface check carries the tags
// the real creates carry.
func TestCheckPermissionsCreateCarriesTheTags(t *testing.T) {
	w := newWorld(t, emulator.World{})
	c := w.client(t, Config{})
	err := c.CheckPermissions(context.Background(), []string{"ec2:CreateNetworkInterface"},
		WithCreateTags(map[string]string{"eni-operator.io/cluster": "prod"}))
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, call := range w.emu.Calls() {
		if call.Action != "CreateNetworkInterface" {
			continue
		}
		seen = true
		if call.Params["TagSpecification.1.Tag.1.Key"][0] != "eni-operator.io/cluster" || call.Params["TagSpecification.1.Tag.1.Value"][0] != "prod" ||
			call.Params["DryRun"][0] != "true" {
			t.Fatalf("DryRun create sent %v, want the cluster tag in TagSpecifications", call.Params)
		}
	}
	if !seen {
		t.Fatal("no CreateNetworkInterface DryRun was made")
	}
}
