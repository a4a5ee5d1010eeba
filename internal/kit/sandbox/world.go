package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// loadWorld seeds the emulator from a World file (the shape of
// ec2-emulator --seed-file and POST /_emulator/world).
func loadWorld(emu *emulator.Emulator, path string) (emulator.LoadResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return emulator.LoadResult{}, err
	}
	var w emulator.World
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return emulator.LoadResult{}, fmt.Errorf("world %s: %w", path, err)
	}
	res, err := emu.Load(w)
	if err != nil {
		return res, fmt.Errorf("world %s: %w", path, err)
	}
	if len(res.VPCs) != 1 || len(res.Instances) == 0 {
		return res, fmt.Errorf("world %s: the sandbox needs exactly one VPC and at least one instance (got %d and %d)", path, len(res.VPCs), len(res.Instances))
	}
	return res, nil
}

// node is a Node object the sandbox made for an emulator instance.
type node struct {
	Name, Instance, Zone, Type, IP string
}

// createNodes makes a Node for every instance of the world, as the AWS
// cloud provider would: spec.providerID aws:///<zone>/<instance-id>, the
// zone and instance-type labels and the instance's private IP; labels
// are added on top (the NodeENI's selector, so every node matches).
// Nodes are named after the instance's Name tag, else its ID.
func createNodes(ctx context.Context, k8s client.Client, ec2c *ec2.Client, loaded emulator.LoadResult, labels map[string]string) ([]node, error) {
	var out []node
	for _, li := range loaded.Instances {
		inst, err := ec2c.GetInstance(ctx, li.ID)
		if err != nil {
			return nil, fmt.Errorf("reading instance %s: %w", li.ID, err)
		}
		n := node{Name: inst.Tags["Name"], Instance: inst.ID, Zone: inst.AvailabilityZone, Type: inst.Type, IP: inst.PrivateIP}
		if n.Name == "" {
			n.Name = inst.ID
		}
		l := map[string]string{
			corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: n.Zone,
			corev1.LabelTopologyRegion: region, corev1.LabelInstanceTypeStable: n.Type,
		}
		maps.Copy(l, labels)
		obj := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: l},
			Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", n.Zone, n.Instance)},
		}
		if err := k8s.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		// No kubelet runs: the sandbox reports what one would.
		obj.Status = corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}, {Type: corev1.NodeHostName, Address: n.Name}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Sandbox", Message: "no kubelet: the sandbox stands in", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		if err := k8s.Status().Update(ctx, obj); err != nil {
			return nil, fmt.Errorf("node %s status: %w", n.Name, err)
		}
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b node) int { return cmpStrings(a.Name, b.Name) })
	return out, nil
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
