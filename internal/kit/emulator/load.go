package emulator

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"time"
)

// Load adds a whole World in one step. Entries are created in the order
// instance types, VPCs, subnets, security groups, instances, ENIs; an entry
// may refer to an earlier one, or to one already loaded, by ID or by Name
// (a security group's GroupName, any other resource's Name tag). On error the entries
// before the failing one stay loaded and the error names the failing one.
func (e *Emulator) Load(wd World) (LoadResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := &loader{w: e.world, env: callEnv{now: time.Now()}, names: map[string]string{}}
	for _, step := range []func(World) error{
		l.instanceTypes, l.vpcs, l.subnets, l.securityGroups, l.instances, l.networkInterfaces,
	} {
		if err := step(wd); err != nil {
			return l.res, err
		}
	}
	return l.res, nil
}

// loader is one World load: what it created so far and the names it gave.
type loader struct {
	w     *world
	env   callEnv
	names map[string]string // Name -> ID, of this load's entries
	res   LoadResult
}

// ref resolves a reference: a Name given in this load, then the Name of a
// resource already loaded, else an ID.
func (l *loader) ref(s string) string {
	if id, ok := l.names[s]; ok {
		return id
	}
	if id, ok := l.w.byName(s); ok {
		return id
	}
	return s
}

func (l *loader) refs(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = l.ref(s)
	}
	return out
}

// name records an entry's Name for later references.
func (l *loader) name(name, id string) {
	if name != "" {
		l.names[name] = id
	}
}

// withName adds the Name tag a spec's Name stands for.
func withName(tags map[string]string, name string) map[string]string {
	out := maps.Clone(tags)
	if out == nil {
		out = map[string]string{}
	}
	if name != "" {
		out["Name"] = name
	}
	return out
}

func (l *loader) instanceTypes(wd World) error {
	for _, t := range wd.InstanceTypes {
		if t.Name == "" || t.MaximumNetworkInterfaces < 1 {
			return fmt.Errorf("instance type %q: name and maximumNetworkInterfaces >= 1 are required", t.Name)
		}
		l.w.instanceTypes[t.Name] = fromSpec(t)
	}
	return nil
}

// each creates a list's entries in order; the error names the failing
// entry by its field and index.
func each[S any](field string, list []S, create func(S) error) error {
	for i, s := range list {
		if err := create(s); err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	return nil
}

func (l *loader) vpcs(wd World) error {
	return each("vpcs", wd.VPCs, func(v VPCSpec) error {
		x, err := l.w.newVPC(v.ID, v.CIDR, withName(v.Tags, v.Name), v.AmazonProvidedIPv6)
		for _, c := range v.SecondaryCIDRs {
			if err == nil {
				err = x.associateCIDR(c)
			}
		}
		return l.created(&l.res.VPCs, v.Name, x, err)
	})
}

func (l *loader) subnets(wd World) error {
	return each("subnets", wd.Subnets, func(s SubnetSpec) error {
		var block netip.Prefix
		if v, ok := l.w.vpcs[l.ref(s.VPC)]; ok {
			block = v.ipv6
		}
		ipv6, perr := s.IPv6CIDRIn(block)
		if perr != nil {
			return perr
		}
		x, err := l.w.newSubnet(subnetRequest{id: s.ID, vpcID: l.ref(s.VPC), cidr: s.CIDR, ipv6: ipv6,
			az: s.AvailabilityZone, tags: withName(s.Tags, s.Name)})
		return l.created(&l.res.Subnets, s.Name, x, err)
	})
}

func (l *loader) securityGroups(wd World) error {
	return each("securityGroups", wd.SecurityGroups, func(g SecurityGroupSpec) error {
		x, err := l.w.newSecurityGroup(g.ID, g.Name, l.ref(g.VPC), g.Description, g.Tags)
		return l.created(&l.res.SecurityGroups, g.Name, x, err)
	})
}

// created records a resource the load made, unless err says it failed:
// its ID in the result's list and under its Name for later references.
func (l *loader) created(list *[]string, name string, r interface{ ident() string }, err *apiError) error {
	if err != nil {
		return err
	}
	l.name(name, r.ident())
	*list = append(*list, r.ident())
	return nil
}

func (l *loader) instances(wd World) error {
	return each("instances", wd.Instances, func(spec InstanceSpec) error {
		loaded, err := l.instance(spec)
		if err != nil {
			return err
		}
		l.res.Instances = append(l.res.Instances, loaded)
		return nil
	})
}

func (l *loader) instance(spec InstanceSpec) (LoadedInstance, error) {
	w := l.w
	if _, ok := w.instanceTypes[spec.Type]; !ok {
		return LoadedInstance{}, fmt.Errorf("unknown instance type %q (add it under instanceTypes)", spec.Type)
	}
	if _, ok := w.subnets[l.ref(spec.Subnet)]; !ok {
		return LoadedInstance{}, notFound("subnet", spec.Subnet)
	}
	inst, err := w.launch(instanceRequest{imageID: "ami-00000000", instanceType: spec.Type, subnetID: l.ref(spec.Subnet),
		groups: l.refs(spec.SecurityGroups), privateIP: spec.PrivateIP, tags: withName(spec.Tags, spec.Name)}, l.env)
	if err != nil {
		return LoadedInstance{}, err
	}
	if spec.ID != "" {
		if err := l.renameInstance(inst, spec.ID); err != nil {
			return LoadedInstance{}, err
		}
	}
	l.name(spec.Name, inst.id)
	primary := w.enis[inst.primaryENI]
	if err := w.seedSecondary(primary, spec.SecondaryIPs, spec.SecondaryIPCount); err != nil {
		return LoadedInstance{}, err
	}
	return LoadedInstance{ID: inst.id, PrivateIP: primary.primaryIP.String(),
		PrimaryENI: primary.id, MAC: primary.mac, SecondaryIPs: addrStrings(primary.secondaryIPs)}, nil
}

// renameInstance gives a launched instance the ID its spec asks for.
func (l *loader) renameInstance(inst *instance, id string) error {
	w := l.w
	if err := checkID("i", id); err != nil {
		return err
	}
	if w.idTaken(id) {
		return fmt.Errorf("ID %s is already taken", id)
	}
	delete(w.instances, inst.id)
	w.enis[inst.primaryENI].attachment.instanceID = id
	inst.id = id
	w.instances[inst.id] = inst
	return nil
}

func (l *loader) networkInterfaces(wd World) error {
	return each("networkInterfaces", wd.NetworkInterfaces, func(spec NetworkInterfaceSpec) error {
		count := spec.Count
		if count == 0 {
			count = 1
		}
		if count > 1 && (spec.ID != "" || spec.PrivateIP != "" || len(spec.SecondaryIPs) > 0 || spec.Instance != "") {
			return errors.New("count > 1 cannot be combined with id, privateIp, secondaryIps or instanceId")
		}
		for range count {
			loaded, err := l.networkInterface(spec)
			if err != nil {
				return err
			}
			l.res.NetworkInterfaces = append(l.res.NetworkInterfaces, loaded)
		}
		return nil
	})
}

func (l *loader) networkInterface(spec NetworkInterfaceSpec) (LoadedENI, error) {
	w := l.w
	n, err := w.createENI(eniRequest{subnetID: l.ref(spec.Subnet), interfaceType: spec.InterfaceType,
		description: spec.Description, groups: l.refs(spec.SecurityGroups), primaryIP: spec.PrivateIP,
		secondaryIPs: spec.SecondaryIPs, secondaryCount: spec.SecondaryIPCount, ipv6: spec.IPv6Addresses,
		prefixes: spec.IPv4Prefixes, prefixCount: spec.IPv4PrefixCount, tags: spec.Tags}, l.env)
	if err != nil {
		return LoadedENI{}, err
	}
	if n.interfaceType == "" {
		n.interfaceType = "interface"
	}
	if spec.ID != "" {
		if w.idTaken(spec.ID) {
			return LoadedENI{}, apiErr("InvalidParameterValue", "ID %s is already taken", spec.ID)
		}
		if err := checkID("eni", spec.ID); err != nil {
			return LoadedENI{}, err
		}
		delete(w.enis, n.id)
		n.id = spec.ID
		w.enis[n.id] = n
	}
	if spec.Instance != "" {
		inst, err := w.lookupInstance(l.ref(spec.Instance))
		if err != nil {
			return LoadedENI{}, err
		}
		if _, err := w.attach(n, inst, attachRequest{index: spec.DeviceIndex, card: spec.NetworkCardIndex, deleteOnTermination: spec.DeleteOnTermination}, l.env); err != nil {
			return LoadedENI{}, err
		}
	}
	loaded := LoadedENI{ID: n.id, PrivateIP: n.primaryIP.String(), SecondaryIPs: addrStrings(n.secondaryIPs), MAC: n.mac}
	if n.attachment != nil {
		loaded.Instance = n.attachment.instanceID
	}
	return loaded, nil
}
