package nodeeni

import (
	"context"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// planInput gathers what the plan depends on: the spec resolved against
// the catalog, the matching nodes and the NodeENI's ENIs.
func (r *reconciler) planInput(ctx context.Context, ne *v1alpha1.NodeENI, deleting bool) (eniplan.PlanInput, []eniplan.Blocked, error) {
	in := eniplan.PlanInput{
		Base:                int(ne.Spec.DeviceIndex),
		Settings:            eniplan.SettingsOf(&ne.Spec),
		DeleteOnTermination: ne.Spec.DeleteOnTermination == nil || *ne.Spec.DeleteOnTermination,
		Description:         ne.Spec.Description,
		Tags:                eniplan.SpecTags(ne.Spec.Tags),
		Deleting:            deleting,
		SubnetsComplete:     true,
		MTU:                 ne.Spec.MTU,
		Nodes:               map[string]bool{},
		NodeInstances:       map[string]string{},
		CIDRs:               map[string]string{},
	}
	held, err := r.eniNodes.held(ctx, ne.Name)
	if err != nil {
		return in, nil, err
	}
	// Resolved before the trust check, also when deleting: the deprecated
	// status vouches only for ENIs in the subnets the spec resolves to.
	res, err := r.resolve(ctx, &ne.Spec)
	if err != nil && !deleting {
		return in, nil, err
	}
	in.Legacy, in.Records = eniplan.LegacyOf(ne, held, res.Subnets), eniplan.RecordsOf(held, ne.Name)
	in.ENIs, in.Prove, in.Distrusted = r.trusted(ctx, ne, in.Legacy, in.Records, ofNodeENI(r.ec2, string(ne.UID)))
	in.Recorded = r.applied.records(ne.Name, held, in.ENIs)
	in.Pins, in.SelectionHash = eniplan.PinsOf(ne.Name, held), eniplan.SelectionHash(&ne.Spec)
	if in.Base < 1 {
		in.Base = 1
	}
	if deleting {
		return in, nil, nil
	}
	in.SecurityGroups, in.SubnetsComplete, in.Resolved = res.Groups, res.SubnetsComplete, res.Subnets
	in.SubnetZones = map[string]string{}
	for _, s := range res.All {
		in.SubnetZones[s.ID] = s.AvailabilityZone
	}
	pins := eniplan.ZonePins(in.ENIs, in.Pins, in.SelectionHash, in.SubnetZones)
	in.Subnets = eniplan.PinSubnets(res.Subnets, res.All, pins, ne.Spec.IPv6AddressCount > 0 || ne.Spec.IPv6PrefixCount > 0)
	in.ZoneSubnets = eniplan.ZoneSets(in.Subnets)
	for _, s := range in.Subnets {
		in.CIDRs[s.ID] = s.CIDR
	}
	blocks := append([]eniplan.Blocked(nil), res.Problems...)

	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes); err != nil {
		return in, nil, err
	}
	sel := labels.SelectorFromSet(ne.Spec.NodeSelector)
	var infos []awsnode.Identity
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !n.DeletionTimestamp.IsZero() {
			continue // going away: its ENIs are cleaned up as for a deleted node
		}
		in.Nodes[n.Name] = true
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		info, err := awsnode.Of(n)
		if err != nil {
			blocks = append(blocks, eniplan.Blocked{Node: n.Name, Reason: eniplan.ReasonNotOnEC2, Message: err.Error()})
			continue
		}
		in.NodeInstances[n.Name] = info.Instance
		infos = append(infos, info)
		policyTags(ctx, r.opts.TagPolicies, &in, n)
	}
	var zoneBlocks []eniplan.Blocked
	in.Wants, zoneBlocks = eniplan.Desired(infos, in.Subnets)
	return in, append(blocks, zoneBlocks...), nil
}

// policyTags gives a node's interfaces the tags of the tag policies that
// select it. One whose expression fails for the node keeps spec.tags
// alone, and the log says why.
func policyTags(ctx context.Context, tp TagPolicies, in *eniplan.PlanInput, n *corev1.Node) {
	if tp == nil {
		return
	}
	// Before the policies are loaded, or where one fails, the tags they
	// give are not known (TagDrift).
	in.HoldTags = in.HoldTags || !tp.Loaded()
	tags, err := tp.NodeTags(n, in.Tags)
	if err != nil {
		log.FromContext(ctx).Error(err, "the tag policies that select the node give its NodeENI interfaces no tags; they keep spec.tags", "node", n.Name)
		if in.HoldTagsOn == nil {
			in.HoldTagsOn = map[string]bool{}
		}
		in.HoldTagsOn[n.Name] = true
	}
	if !maps.Equal(tags, in.Tags) {
		if in.NodeTags == nil {
			in.NodeTags = map[string]map[string]string{}
		}
		in.NodeTags[n.Name] = tags
	}
}

// instances describes the instances the plan wants to attach to, with
// the slots of one network card. The calls run concurrently, so the
// client batches them into one DescribeInstances; each instance type's
// limits are then read once.
func instances(ctx context.Context, e EC2, ids []string, card int) (map[string]eniplan.InstanceView, error) {
	out := make(map[string]eniplan.InstanceView, len(ids))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := instance(ctx, e, id, card)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[id] = v
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for id, v := range out {
		if v.Type == "" {
			continue
		}
		l, err := e.InstanceLimits(ctx, v.Type)
		if err != nil {
			return nil, fmt.Errorf("instance type %s: %w", v.Type, err)
		}
		v.Limits, v.MaxENIs = l, eniplan.CardLimit(l, card)
		out[id] = v
	}
	return out, nil
}

func instance(ctx context.Context, e EC2, id string, card int) (eniplan.InstanceView, error) {
	inst, err := e.GetInstance(ctx, id)
	if ec2.IsNotFound(err) {
		return eniplan.InstanceView{ID: id, State: "not found"}, nil
	}
	if err != nil {
		return eniplan.InstanceView{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	v := eniplan.InstanceView{ID: id, Type: inst.Type, State: inst.State, Zone: inst.AvailabilityZone, Slots: map[int]string{}}
	for _, e := range inst.ENIs {
		if e.Attachment != nil && e.Attachment.NetworkCardIndex == card {
			v.Slots[e.Attachment.DeviceIndex] = e.ID
		}
	}
	return v, nil
}
