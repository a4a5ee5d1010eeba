package emulator

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

type describeInstancesResponse struct {
	respMeta
	Reservations []xReservation `xml:"reservationSet>item"`
	NextToken    string         `xml:"nextToken,omitempty"`
}

type runInstancesResponse struct {
	respMeta
	ReservationID string      `xml:"reservationId"`
	OwnerID       string      `xml:"ownerId"`
	Instances     []xInstance `xml:"instancesSet>item"`
}

type terminateInstancesResponse struct {
	respMeta
	Instances []xStateChange `xml:"instancesSet>item"`
}

func (w *world) lookupInstance(id string) (*instance, *apiError) {
	return lookup(w.instances, "i", id)
}

func (w *world) instanceFields(i *instance) fieldFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-id":
			return []string{i.id}, true
		case "instance-state-name":
			return []string{i.state}, true
		case "instance-type":
			return []string{i.instanceType}, true
		case "vpc-id":
			return []string{i.vpcID}, true
		case "subnet-id":
			return []string{i.subnetID}, true
		case "availability-zone":
			return []string{i.az}, true
		case "image-id":
			return []string{i.imageID}, true
		case "private-ip-address", "private-dns-name", "network-interface.network-interface-id",
			"network-interface.addresses.private-ip-address", "network-interface.mac-address":
			var out []string
			for _, n := range w.attachedTo(i.id) {
				switch name {
				case "private-ip-address":
					if n.id == i.primaryENI {
						out = append(out, n.primaryIP.String())
					}
				case "private-dns-name":
					if n.id == i.primaryENI {
						out = append(out, w.dnsName(n.primaryIP))
					}
				case "network-interface.network-interface-id":
					out = append(out, n.id)
				case "network-interface.mac-address":
					out = append(out, n.mac)
				default:
					for _, a := range append([]netip.Addr{n.primaryIP}, n.secondaryIPs...) {
						out = append(out, a.String())
					}
				}
			}
			return out, true
		}
		return tagFields(i.tags, name)
	}
}

func describeInstances(w *world, p params, _ callEnv) (response, *apiError) {
	reservations, next, err := describe(p, describer[*instance, xReservation]{idParam: "InstanceId",
		all: slices.Collect(maps.Values(w.instances)), probe: &instance{}, fields: w.instanceFields, lookup: w.lookupInstance,
		x: func(i *instance) xReservation {
			return xReservation{ReservationID: "r-" + i.id[len("i-"):], OwnerID: w.accountID, Instances: []xInstance{w.xInstance(i)}}
		}})
	if err != nil {
		return nil, err
	}
	return &describeInstancesResponse{Reservations: reservations, NextToken: next}, nil
}

// instanceRequest is the parsed shape of RunInstances (or a seeded instance).
type instanceRequest struct {
	imageID      string
	instanceType string
	subnetID     string
	groups       []string
	privateIP    string
	clientToken  string
	minCount     int
	maxCount     int
	tags         map[string]string
	eniTags      map[string]string
}

// fingerprint identifies the parameters of a RunInstances call for
// ClientToken idempotency: the same token with other parameters is a
// mismatch.
func (r instanceRequest) fingerprint() string {
	return strings.Join([]string{r.imageID, r.instanceType, r.subnetID, sortedJoin(r.groups), r.privateIP,
		strconv.Itoa(r.minCount), strconv.Itoa(r.maxCount), tagString(r.tags), tagString(r.eniTags)}, "|")
}

// sortedJoin is a canonical form of a set of strings.
func sortedJoin(ss []string) string { return strings.Join(slices.Sorted(slices.Values(ss)), ",") }

// tagString is a canonical form of a tag set.
func tagString(tags map[string]string) string {
	kv := make([]string, 0, len(tags))
	for k, v := range tags {
		kv = append(kv, strconv.Quote(k)+"="+strconv.Quote(v))
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

func runInstances(w *world, p params, env callEnv) (response, *apiError) {
	req, err := w.parseInstanceRequest(p)
	if err != nil {
		return nil, err
	}
	if req.clientToken != "" {
		if len(req.clientToken) > 64 {
			return nil, apiErr("InvalidParameterValue", "ClientToken must be at most 64 characters")
		}
		if prior := w.instancesByToken(req.clientToken); len(prior) > 0 {
			return w.replayRunInstances(req, prior)
		}
	}
	resp := &runInstancesResponse{OwnerID: w.accountID}
	for n := 0; n < req.maxCount; n++ {
		inst, err := w.launch(req, env)
		if err != nil {
			if n >= req.minCount {
				break
			}
			return nil, err
		}
		x := w.xInstance(inst)
		x.State = xState("pending")
		resp.Instances = append(resp.Instances, x)
	}
	resp.ReservationID = "r-" + resp.Instances[0].InstanceID[len("i-"):]
	return resp, nil
}

func (w *world) parseInstanceRequest(p params) (instanceRequest, *apiError) {
	req := instanceRequest{
		imageID: p.get("ImageId"), instanceType: p.get("InstanceType"), subnetID: p.get("SubnetId"),
		groups: p.list("SecurityGroupId"), privateIP: p.get("PrivateIpAddress"), clientToken: p.get("ClientToken"),
	}
	if req.subnetID == "" {
		req.subnetID = p.get("NetworkInterface.1.SubnetId")
		req.groups = append(req.groups, p.list("NetworkInterface.1.SecurityGroupId")...)
	}
	if req.imageID == "" {
		return req, apiErr("MissingParameter", "The request must contain the parameter ImageId")
	}
	if req.instanceType == "" {
		req.instanceType = "m5.large"
	}
	if _, ok := w.instanceTypes[req.instanceType]; !ok {
		return req, apiErr("InvalidParameterValue", "Invalid value '%s' for InstanceType.", req.instanceType)
	}
	if req.subnetID == "" {
		return req, apiErr("VPCIdNotSpecified", "No default VPC for this user. Specify a subnet.")
	}
	var err *apiError
	if req.minCount, _, err = p.int("MinCount"); err != nil {
		return req, err
	}
	if req.maxCount, _, err = p.int("MaxCount"); err != nil {
		return req, err
	}
	if req.minCount < 1 || req.maxCount < req.minCount {
		return req, apiErr("InvalidParameterValue", "MinCount must be >= 1 and MaxCount >= MinCount")
	}
	if req.privateIP != "" && req.maxCount > 1 {
		return req, apiErr("InvalidParameterCombination", "PrivateIpAddress can only be used when launching one instance")
	}
	req.tags, req.eniTags, err = instanceTags(p)
	return req, err
}

// instanceTags reads RunInstances' TagSpecification.N into the instance's
// and its primary ENI's tags.
func instanceTags(p params) (tags, eniTags map[string]string, err *apiError) {
	tags, eniTags = map[string]string{}, map[string]string{}
	for i := 1; i <= p.members("TagSpecification"); i++ {
		prefix := "TagSpecification." + strconv.Itoa(i)
		keys, values, _ := p.tags(prefix + ".Tag")
		target := tags
		switch rt := p.get(prefix + ".ResourceType"); rt {
		case "instance":
		case "network-interface":
			target = eniTags
		case "volume":
			continue // volumes are not modelled
		default:
			return nil, nil, apiErr("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		for j, k := range keys {
			target[k] = values[j]
		}
	}
	if err := validateTags(nil, tags); err != nil {
		return nil, nil, err
	}
	if err := validateTags(nil, eniTags); err != nil {
		return nil, nil, err
	}
	return tags, eniTags, nil
}

// instancesByToken is the instances launched with a ClientToken, in launch
// order.
func (w *world) instancesByToken(token string) []*instance {
	var out []*instance
	for _, i := range w.instances {
		if i.clientToken == token {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b *instance) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// replayRunInstances answers a repeated ClientToken with the instances it
// launched, if the parameters are the same.
func (w *world) replayRunInstances(req instanceRequest, prior []*instance) (response, *apiError) {
	if prior[0].fingerprint != req.fingerprint() {
		return nil, apiErr("IdempotentParameterMismatch",
			"The client token you have provided is associated with a resource that was created with different parameters.")
	}
	resp := &runInstancesResponse{ReservationID: "r-" + prior[0].id[len("i-"):], OwnerID: w.accountID}
	for _, i := range prior {
		resp.Instances = append(resp.Instances, w.xInstance(i))
	}
	return resp, nil
}

// launch creates a running instance and its primary ENI at device index 0.
func (w *world) launch(req instanceRequest, env callEnv) (*instance, *apiError) {
	primary, err := w.createENI(eniRequest{subnetID: req.subnetID, interfaceType: "interface",
		groups: req.groups, primaryIP: req.privateIP, tags: req.eniTags, description: "Primary network interface"}, env)
	if err != nil {
		return nil, err
	}
	s := w.subnets[req.subnetID]
	inst := &instance{
		resource: w.newResource(w.newID("i"), req.tags), instanceType: req.instanceType, subnetID: s.id,
		vpcID: s.vpcID, az: s.az, groups: primary.groups, state: "running", launchTime: env.now,
		primaryENI: primary.id, imageID: req.imageID, clientToken: req.clientToken, fingerprint: req.fingerprint(),
	}
	w.instances[inst.id] = inst
	a := &attachment{id: w.newID("eni-attach"), instanceID: inst.id, deviceIndex: 0, status: "attached",
		deleteOnTermination: true, attachTime: env.now}
	primary.attachment = a
	w.attachments[a.id] = primary
	return inst, nil
}

func terminateInstances(w *world, p params, env callEnv) (response, *apiError) {
	ids := p.list("InstanceId")
	if len(ids) == 0 {
		return nil, apiErr("MissingParameter", "The request must contain the parameter InstanceId")
	}
	var targets []*instance
	for _, id := range ids {
		i, err := w.lookupInstance(id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, i)
	}
	resp := &terminateInstancesResponse{}
	for _, i := range targets {
		prev := i.state
		if prev != "terminated" {
			w.terminate(i, env)
		}
		resp.Instances = append(resp.Instances, xStateChange{InstanceID: i.id, PreviousState: xState(prev), CurrentState: xState(i.state)})
	}
	return resp, nil
}

// terminate shuts an instance down: ENIs marked DeleteOnTermination are
// deleted, the others detached and left available.
func (w *world) terminate(i *instance, _ callEnv) {
	for _, n := range w.attachedTo(i.id) {
		if n.attachment.deleteOnTermination {
			w.deleteENI(n)
			continue
		}
		delete(w.attachments, n.attachment.id)
		n.attachment = nil
	}
	i.state = "shutting-down"
	w.terminating[i.id] = i
}
