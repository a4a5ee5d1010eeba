package emulator

import (
	"fmt"
	"strconv"
	"strings"
)

// AuthRequest is one authorization IAM performs for an EC2 call: an
// action on one resource, with the condition keys EC2 supplies for it. A
// call that touches several resources (Attach: the ENI and the instance;
// Create: the new ENI, its subnet, its security groups and the tags set
// at creation) needs every one of them allowed. Recorded so that tests
// can replay the calls a component really made through an IAM evaluator
// instead of requests written by hand.
type AuthRequest struct {
	Action   string `json:"action"`
	Resource string `json:"resource"`
	// Context maps condition keys to values: aws:ResourceTag/<key> and
	// ec2:Vpc (the VPC's ARN) of the resource, aws:RequestTag/<key> and
	// aws:TagKeys of the request, ec2:CreateAction for tags set by a
	// create. aws:TagKeys is the only multivalued key.
	Context map[string][]string `json:"context,omitempty"`
}

// Condition keys as IAM names them (Service Authorization Reference,
// Amazon EC2).
const (
	ctxResourceTag  = "aws:ResourceTag/"
	ctxRequestTag   = "aws:RequestTag/"
	ctxTagKeys      = "aws:TagKeys"
	ctxVpc          = "ec2:Vpc"
	ctxCreateAction = "ec2:CreateAction"
)

// authContext computes the authorizations of a call from the world as it
// is before the call: IAM decides before EC2 changes anything, so a
// DeleteTags is judged on the tags it is about to remove.
func (e *Emulator) authContext(action string, p params) []AuthRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.world.authRequests(action, p)
}

// authRequests returns nil for the actions it does not model (address
// assignment, instances, VPCs), so a replay can tell "not modelled" from
// "nothing to authorize".
func (w *world) authRequests(action string, p params) []AuthRequest {
	iamAction := "ec2:" + action
	switch action {
	case "CreateNetworkInterface":
		return w.createENIAuth(p)
	case "CreateTags", "DeleteTags":
		return w.tagAuth(iamAction, p, action == "CreateTags")
	case "AttachNetworkInterface":
		return []AuthRequest{w.on(iamAction, p.get("NetworkInterfaceId")), w.on(iamAction, p.get("InstanceId"))}
	case "DetachNetworkInterface":
		return w.detachAuth(iamAction, p.get("AttachmentId"))
	case "DeleteNetworkInterface":
		return []AuthRequest{w.on(iamAction, p.get("NetworkInterfaceId"))}
	case "CreateSubnetCidrReservation":
		return w.createReservationAuth(p)
	case "DeleteSubnetCidrReservation":
		return []AuthRequest{w.on(iamAction, p.get("SubnetCidrReservationId"))}
	case "GetSubnetCidrReservations":
		return []AuthRequest{{Action: iamAction, Resource: "*"}}
	case "ModifyNetworkInterfaceAttribute":
		out := []AuthRequest{w.on(iamAction, p.get("NetworkInterfaceId"))}
		for _, g := range p.list("SecurityGroupId") {
			out = append(out, w.on(iamAction, g))
		}
		return out
	}
	if strings.HasPrefix(action, "Describe") {
		// Describe actions support no resource-level permissions.
		return []AuthRequest{{Action: iamAction, Resource: "*"}}
	}
	return nil
}

func (w *world) arn(kind, id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", w.region, w.accountID, kind, id)
}

// on is the authorization of an action on the resource id names. A
// resource that does not exist (the placeholders of a DryRun permission
// check) has no tags and no VPC, as EC2 then supplies neither key; its
// type comes from the ID's prefix.
func (w *world) on(action, id string) AuthRequest {
	ctx := map[string][]string{}
	kind, tags, vpcID := w.authFacts(id)
	for k, v := range tags {
		ctx[ctxResourceTag+k] = []string{v}
	}
	if vpcID != "" {
		ctx[ctxVpc] = []string{w.arn("vpc", vpcID)}
	}
	return AuthRequest{Action: action, Resource: w.arn(kind, id), Context: ctx}
}

// authFacts looks a resource up whether or not Describe calls can see it
// yet: IAM sees the resource itself, not EC2's eventually consistent view.
func (w *world) authFacts(id string) (kind string, tags map[string]string, vpcID string) {
	if n, ok := w.enis[id]; ok {
		return "network-interface", n.tags, n.vpcID
	}
	if i, ok := w.instances[id]; ok {
		// Instances have no ec2:Vpc condition key.
		return "instance", i.tags, ""
	}
	if s, ok := w.subnets[id]; ok {
		return "subnet", s.tags, s.vpcID
	}
	if g, ok := w.groups[id]; ok {
		return "security-group", g.tags, g.vpcID
	}
	if v, ok := w.vpcs[id]; ok {
		return "vpc", v.tags, ""
	}
	if r, ok := w.reservations[id]; ok {
		return "subnet-cidr-reservation", r.tags, ""
	}
	return kindOfID(id), nil, ""
}

func kindOfID(id string) string {
	for _, k := range []struct{ prefix, kind string }{
		{"eni-attach-", "network-interface-attachment"}, {"eni-", "network-interface"}, {"i-", "instance"},
		{"subnet-", "subnet"}, {"sg-", "security-group"}, {"vpc-", "vpc"}, {"scr-", "subnet-cidr-reservation"},
	} {
		if strings.HasPrefix(id, k.prefix) {
			return k.kind
		}
	}
	return "unknown"
}

// createENIAuth: CreateNetworkInterface is authorized on the new ENI
// (network-interface/*, as its ID does not exist yet) with the request's
// tags, on its subnet and on each security group it names; tags given in
// TagSpecifications are authorized as ec2:CreateTags on the new ENI with
// ec2:CreateAction set (EC2 User Guide, "Grant permission to tag
// resources during creation").
func (w *world) createENIAuth(p params) []AuthRequest {
	const action = "ec2:CreateNetworkInterface"
	subnetID := p.get("SubnetId")
	newENI := map[string][]string{}
	if s, ok := w.subnets[subnetID]; ok {
		newENI[ctxVpc] = []string{w.arn("vpc", s.vpcID)}
	}
	tags := createTagsOf(p, "network-interface")
	addRequestTags(newENI, tags)
	out := []AuthRequest{{Action: action, Resource: w.arn("network-interface", "*"), Context: newENI}}
	out = append(out, w.on(action, subnetID))
	for _, g := range p.list("SecurityGroupId") {
		out = append(out, w.on(action, g))
	}
	return append(out, w.tagOnCreate("CreateNetworkInterface", "network-interface", tags, newENI)...)
}

// createReservationAuth: CreateSubnetCidrReservation is authorized on
// the new reservation with the request's tags and on its subnet; tags
// given at creation as ec2:CreateTags with ec2:CreateAction set, as for
// an ENI.
func (w *world) createReservationAuth(p params) []AuthRequest {
	const action = "ec2:CreateSubnetCidrReservation"
	newRes := map[string][]string{}
	tags := createTagsOf(p, "subnet-cidr-reservation")
	addRequestTags(newRes, tags)
	out := []AuthRequest{{Action: action, Resource: w.arn("subnet-cidr-reservation", "*"), Context: newRes}, w.on(action, p.get("SubnetId"))}
	return append(out, w.tagOnCreate("CreateSubnetCidrReservation", "subnet-cidr-reservation", tags, newRes)...)
}

// tagOnCreate is the ec2:CreateTags authorization of tags set by a
// create (ec2:CreateAction), on the new resource of kind with its
// context; none without tags.
func (w *world) tagOnCreate(createAction, kind string, tags map[string]string, ctx map[string][]string) []AuthRequest {
	if len(tags) == 0 {
		return nil
	}
	tagCtx := map[string][]string{ctxCreateAction: {createAction}}
	for k, v := range ctx {
		tagCtx[k] = v
	}
	return []AuthRequest{{Action: "ec2:CreateTags", Resource: w.arn(kind, "*"), Context: tagCtx}}
}

// createTagsOf reads the tags of the TagSpecifications for one resource
// type without validating them: a request EC2 refuses is still
// authorized first.
func createTagsOf(p params, resourceType string) map[string]string {
	out := map[string]string{}
	for i := 1; i <= p.members("TagSpecification"); i++ {
		prefix := "TagSpecification." + strconv.Itoa(i)
		if p.get(prefix+".ResourceType") != resourceType {
			continue
		}
		keys, values, _ := p.tags(prefix + ".Tag")
		for j, k := range keys {
			out[k] = values[j]
		}
	}
	return out
}

// addRequestTags sets aws:RequestTag/<key> per tag and aws:TagKeys; with
// no tags neither key is present, as in EC2's own request context.
func addRequestTags(ctx map[string][]string, tags map[string]string) {
	for k, v := range tags {
		ctx[ctxRequestTag+k] = []string{v}
		ctx[ctxTagKeys] = append(ctx[ctxTagKeys], k)
	}
}

// tagAuth: CreateTags and DeleteTags are authorized on each resource
// named, with the keys of the request (a DeleteTags naming none carries
// no aws:TagKeys: it deletes every user tag) and, for CreateTags, their
// values as aws:RequestTag.
func (w *world) tagAuth(action string, p params, create bool) []AuthRequest {
	keys, values, _ := p.tags("Tag")
	var out []AuthRequest
	for _, id := range p.list("ResourceId") {
		r := w.on(action, id)
		if len(keys) > 0 {
			r.Context[ctxTagKeys] = append([]string(nil), keys...)
		}
		if create {
			for i, k := range keys {
				r.Context[ctxRequestTag+k] = []string{values[i]}
			}
		}
		out = append(out, r)
	}
	return out
}

// detachAuth: DetachNetworkInterface names only the attachment; IAM
// authorizes the ENI and the instance it joins. An unknown attachment
// (a DryRun placeholder) leaves both unknown: wildcard resources without
// tags, which no tag-scoped grant allows.
func (w *world) detachAuth(action, attachmentID string) []AuthRequest {
	n, ok := w.attachments[attachmentID]
	if !ok || n.attachment == nil {
		return []AuthRequest{
			{Action: action, Resource: w.arn("network-interface", "*"), Context: map[string][]string{}},
			{Action: action, Resource: w.arn("instance", "*"), Context: map[string][]string{}},
		}
	}
	return []AuthRequest{w.on(action, n.id), w.on(action, n.attachment.instanceID)}
}

// RecordAuth turns on (or off) recording each call's authorizations in
// Call.Auth. Off by default: a batched CreateTags names up to 1,000
// resources, and the call log of a benchmark would hold the tags of each
// of them once more per call. It stays as set across Reset.
func (e *Emulator) RecordAuth(on bool) { e.recordAuth.Store(on) }
