package testenv

import (
	"fmt"
	"slices"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// Zones are the availability zones of the default world, in the order
// nodes and subnets alternate between them.
func Zones() []string { return []string{"us-east-1a", "us-east-1b"} }

// Zone is the zone of the i-th node of a world (alternating).
func Zone(i int) string { return Zones()[i%len(Zones())] }

// WorldOption changes the default world before it is loaded.
type WorldOption func(*emulator.World)

// DefaultWorld is the EC2 estate most tests start from: VPC "main"
// (10.0.0.0/16); subnets nodes-a/-b, multus-a/-b and storage-a/-b (/20s
// alternating us-east-1a and us-east-1b) and "pods" (10.0.128.0/17 in
// us-east-1a, room for a benchmark's pods); security group "multus".
// Options add or remove what a test varies.
func DefaultWorld(opts ...WorldOption) emulator.World {
	w := emulator.World{VPCs: []emulator.VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}}}
	for i, name := range []string{"nodes", "multus", "storage"} {
		for j, zone := range Zones() {
			w.Subnets = append(w.Subnets, emulator.SubnetSpec{Name: name + "-" + zone[len(zone)-1:], VPC: "main",
				CIDR: fmt.Sprintf("10.0.%d.0/20", 16*(2*i+j)), AvailabilityZone: zone})
		}
	}
	w.Subnets = append(w.Subnets, emulator.SubnetSpec{Name: "pods", VPC: "main", CIDR: "10.0.128.0/17", AvailabilityZone: "us-east-1a"})
	w.SecurityGroups = []emulator.SecurityGroupSpec{{Name: "multus", VPC: "main"}}
	for _, o := range opts {
		o(&w)
	}
	return w
}

// OnlySubnets keeps the named subnets of the world, in its order.
func OnlySubnets(names ...string) WorldOption {
	return func(w *emulator.World) {
		w.Subnets = slices.DeleteFunc(w.Subnets, func(s emulator.SubnetSpec) bool { return !slices.Contains(names, s.Name) })
	}
}

// WithSecurityGroups adds security groups to VPC "main".
func WithSecurityGroups(names ...string) WorldOption {
	return func(w *emulator.World) {
		for _, n := range names {
			w.SecurityGroups = append(w.SecurityGroups, emulator.SecurityGroupSpec{Name: n, VPC: "main"})
		}
	}
}

// WithOtherVPC adds VPC "other" (10.1.0.0/16) with subnet "elsewhere"
// and a security group "multus" of its own: names the operator must not
// resolve into another VPC.
func WithOtherVPC() WorldOption {
	return func(w *emulator.World) {
		w.VPCs = append(w.VPCs, emulator.VPCSpec{Name: "other", CIDR: "10.1.0.0/16"})
		w.Subnets = append(w.Subnets, emulator.SubnetSpec{Name: "elsewhere", VPC: "other", CIDR: "10.1.0.0/20", AvailabilityZone: "us-east-1a"})
		w.SecurityGroups = append(w.SecurityGroups, emulator.SecurityGroupSpec{Name: "multus", VPC: "other"})
	}
}

// WithNodes adds n instances node-0 … node-(n-1) of instanceType,
// alternating between subnets nodes-a and nodes-b (as Zone alternates).
func WithNodes(n int, instanceType string) WorldOption {
	return func(w *emulator.World) {
		for i := range n {
			zone := Zone(i)
			w.Instances = append(w.Instances, emulator.InstanceSpec{Name: NodeName(i), Type: instanceType, Subnet: "nodes-" + zone[len(zone)-1:]})
		}
	}
}

// NodeName is the name of the i-th node of WithNodes (its instance and
// its Node).
func NodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// WithENIs adds network interfaces.
func WithENIs(enis ...emulator.NetworkInterfaceSpec) WorldOption {
	return func(w *emulator.World) { w.NetworkInterfaces = append(w.NetworkInterfaces, enis...) }
}

// BranchENIs are n pod (branch) ENIs in subnet "pods" with tags.
func BranchENIs(n int, tags map[string]string) emulator.NetworkInterfaceSpec {
	return emulator.NetworkInterfaceSpec{Subnet: "pods", InterfaceType: "branch", Count: n, Tags: tags}
}
