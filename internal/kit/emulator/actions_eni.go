package emulator

import (
	"strings"
)

type returnResponse struct {
	respMeta
	Return bool `xml:"return"`
}

type attachNetworkInterfaceResponse struct {
	respMeta
	AttachmentID     string `xml:"attachmentId"`
	NetworkCardIndex int    `xml:"networkCardIndex"`
}

func (w *world) lookupENI(id string) (*eni, *apiError) {
	if err := checkID("eni", id); err != nil {
		return nil, err
	}
	n, ok := w.enis[id]
	if !ok || !w.visible(id) {
		return nil, notFound("eni", id)
	}
	return n, nil
}

// eniParam is the ENI the request's NetworkInterfaceId names.
func (w *world) eniParam(p params) (*eni, *apiError) {
	id, err := p.required("NetworkInterfaceId")
	if err != nil {
		return nil, err
	}
	return w.lookupENI(id)
}

func deleteNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	if n.attachment != nil {
		return nil, apiErr("InvalidNetworkInterface.InUse", "The network interface %s is currently in use.", n.id)
	}
	w.leaveGhost(n, env)
	w.deleteENI(n)
	return &returnResponse{Return: true}, nil
}

func attachNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	eniID, err := p.required("NetworkInterfaceId")
	if err != nil {
		return nil, err
	}
	instanceID, err := p.required("InstanceId")
	if err != nil {
		return nil, err
	}
	var req attachRequest
	index, has, err := p.int("DeviceIndex")
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, apiErr("MissingParameter", "The request must contain the parameter DeviceIndex")
	}
	req.index = index
	if req.card, _, err = p.int("NetworkCardIndex"); err != nil {
		return nil, err
	}
	n, err := w.lookupENI(eniID)
	if err != nil {
		return nil, err
	}
	inst, err := w.lookupInstance(instanceID)
	if err != nil {
		return nil, err
	}
	a, err := w.attach(n, inst, req, env)
	if err != nil {
		return nil, err
	}
	w.startAttaching(n, env)
	return &attachNetworkInterfaceResponse{AttachmentID: a.id, NetworkCardIndex: a.networkCard}, nil
}

// attachRequest is where an ENI is attached: a device index on a
// network card.
type attachRequest struct {
	index, card         int
	deleteOnTermination bool
}

// attach checks everything AWS checks before attaching an ENI.
func (w *world) attach(n *eni, inst *instance, req attachRequest, env callEnv) (*attachment, *apiError) {
	if err := w.checkAttach(n, inst); err != nil {
		return nil, err
	}
	t := w.instanceTypes[inst.instanceType]
	cardLimit, ok := t.card(req.card)
	if !ok {
		return nil, apiErr("InvalidParameterValue", "Value (%d) for parameter networkCardIndex is invalid: instance type %s has %d network cards.",
			req.card, inst.instanceType, len(t.cards))
	}
	if req.index < 0 || req.index >= 64 {
		return nil, apiErr("InvalidParameterValue", "Value (%d) for parameter deviceIndex is invalid.", req.index)
	}
	onCard := 0
	for _, other := range w.attachedTo(inst.id) {
		if other.attachment.networkCard != req.card {
			continue
		}
		onCard++
		if other.attachment.deviceIndex == req.index {
			return nil, apiErr("InvalidParameterValue", "Instance '%s' already has an interface attached at device index '%d'.", inst.id, req.index)
		}
	}
	if onCard+1 > cardLimit || req.index >= cardLimit {
		return nil, apiErr("AttachmentLimitExceeded", "Interface count %d exceeds the limit for %s", onCard+1, inst.instanceType)
	}
	a := &attachment{id: w.newID("eni-attach"), instanceID: inst.id, deviceIndex: req.index, networkCard: req.card, status: "attached",
		deleteOnTermination: req.deleteOnTermination, attachTime: env.now}
	n.attachment = a
	w.attachments[a.id] = n
	return a, nil
}

// checkAttach refuses what no device index makes right: an instance
// not running or stopped, an ENI in use, in another zone or VPC, a
// branch ENI, an EFA on a type without EFA, IPv6 on a type without it.
func (w *world) checkAttach(n *eni, inst *instance) *apiError {
	if inst.state != "running" && inst.state != "stopped" {
		return apiErr("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be attached to (%s).", inst.id, inst.state)
	}
	if n.attachment != nil {
		return apiErr("InvalidNetworkInterface.InUse", "Interface: [%s] in use.", n.id)
	}
	if n.az != inst.az {
		return apiErr("InvalidParameterCombination",
			"You may not attach a network interface to an instance if they are not in the same availability zone")
	}
	if n.vpcID != inst.vpcID {
		return apiErr("InvalidParameterCombination", "The network interface and the instance are in different VPCs")
	}
	t := w.instanceTypes[inst.instanceType]
	switch {
	case n.interfaceType == "branch":
		return apiErr("InvalidParameterValue", "A branch network interface cannot be attached to an instance directly")
	case (n.interfaceType == "efa" || n.interfaceType == "efa-only") && !t.efaSupported:
		return apiErr("InvalidParameterCombination", "Instance type %s does not support Elastic Fabric Adapter (EFA) interfaces.", inst.instanceType)
	case (len(n.ipv6) > 0 || len(n.ipv6Prefixes) > 0) && !t.ipv6Supported:
		return apiErr("InvalidParameterCombination", "Instance type %s does not support IPv6.", inst.instanceType)
	}
	return nil
}

func detachNetworkInterface(w *world, p params, env callEnv) (response, *apiError) {
	id, err := p.required("AttachmentId")
	if err != nil {
		return nil, err
	}
	n, err := lookup(w.attachments, "eni-attach", id)
	if err != nil {
		return nil, err
	}
	if n.attachment.deviceIndex == 0 {
		return nil, apiErr("OperationNotPermitted", "The network interface at device index 0 cannot be detached.")
	}
	if n.attachment.status == "detaching" {
		return &returnResponse{Return: true}, nil
	}
	n.attachment.status = "detaching"
	n.attachment.detachDone = env.now.Add(env.detachDelay)
	w.detaching[n.id] = n
	return &returnResponse{Return: true}, nil
}

func modifyNetworkInterfaceAttribute(w *world, p params, _ callEnv) (response, *apiError) {
	n, err := w.eniParam(p)
	if err != nil {
		return nil, err
	}
	switch {
	case p.has("Attachment.AttachmentId"):
		aid := p.get("Attachment.AttachmentId")
		if n.attachment == nil || n.attachment.id != aid {
			return nil, notFound("eni-attach", aid)
		}
		if p.has("Attachment.DeleteOnTermination") {
			n.attachment.deleteOnTermination = p.bool("Attachment.DeleteOnTermination")
		}
	case p.has("Description.Value"):
		n.description = p.get("Description.Value")
	case len(p.list("SecurityGroupId")) > 0:
		groups := p.list("SecurityGroupId")
		for _, g := range groups {
			sg, err := lookup(w.groups, "sg", g)
			if err != nil {
				return nil, err
			}
			if sg.vpcID != n.vpcID {
				return nil, apiErr("InvalidParameterValue", "Security group %s belongs to another VPC", g)
			}
		}
		n.groups = groups
	case p.has("SourceDestCheck.Value"):
		v := p.get("SourceDestCheck.Value")
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter sourceDestCheck is invalid.", v)
		}
		n.sourceDestCheck = p.bool("SourceDestCheck.Value")
	default:
		return nil, apiErr("MissingParameter", "You must specify an attribute to modify.")
	}
	return &returnResponse{Return: true}, nil
}
