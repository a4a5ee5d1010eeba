package nodeeni

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// executor carries out a plan's actions on EC2, node by node, and
// records what the stores that outlive a pass must know of them.
type executor struct {
	ec2      EC2
	metrics  *metrics
	recorder recorder.EventRecorder
	trust    eniplan.TrustCheck
	births   *births
	answers  *answers
	applied  *appliedTags
	eniNodes eniNodes
	// cluster is --cluster-name; parallel bounds the nodes acted on at
	// once (MaxParallelNodes).
	cluster  string
	parallel int
	clock    clock.PassiveClock
}

// execute carries out a plan's actions: the actions of one node in order,
// several nodes at once. It returns the nodes EC2 refused (a block, not an
// error: retrying at once would not help) and the first other error.
func (ex *executor) execute(ctx context.Context, ne *v1alpha1.NodeENI, acts []eniplan.Action) ([]eniplan.Blocked, error) {
	order, byNode := eniplan.PerNode(acts)
	var (
		mu       sync.Mutex
		blocks   []eniplan.Blocked
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, ex.parallel)
	)
	for _, node := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func(node string, list []eniplan.Action) {
			defer wg.Done()
			defer func() { <-sem }()
			ev := &nodeEvents{}
			defer ev.flush(ex.recorder, ne, node)
			list, err := ex.eniNodes.recordCreates(ctx, ne, node, list)
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
				return
			}
			for i, a := range list {
				b, err := ex.do(ctx, ne, a, ev)
				if b == nil && err == nil {
					continue
				}
				ex.unsent(list[i+1:])
				mu.Lock()
				if b != nil {
					blocks = append(blocks, *b)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				break // later steps of this node depend on this one
			}
		}(node, byNode[node])
	}
	wg.Wait()
	return blocks, firstErr
}

// do runs one action.
func (ex *executor) do(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	switch a.Kind {
	case eniplan.ActCreate:
		return ex.createAndAttach(ctx, ne, a, ev)
	case eniplan.ActAttach:
		return ex.attach(ctx, ne, a, ev)
	case eniplan.ActSetDOT, eniplan.ActSetGroups, eniplan.ActSetDesc, eniplan.ActSetTags, eniplan.ActSetSourceDestCheck, eniplan.ActAssignIPs:
		return ex.modify(ctx, a, ev)
	case eniplan.ActDetach:
		return ex.detach(ctx, a, ev)
	case eniplan.ActPoll:
		if err := ex.reread(ctx, a.ENI); err != nil {
			return nil, err
		}
		if e, ok := ex.ec2.ENI(a.ENI); ok && e.Attachment == nil && a.Reason != "" {
			return ex.remove(ctx, ne, a, ev)
		}
	case eniplan.ActDelete:
		return ex.remove(ctx, ne, a, ev)
	case eniplan.ActAdopt:
		return ex.adoptENI(ctx, a, ev)
	case eniplan.ActProve:
		return ex.prove(ctx, a, ev)
	}
	return nil, nil
}

// unsent settles the records of the creates a node's failed step kept
// from being sent: no ENI shows their nonces.
func (ex *executor) unsent(rest []eniplan.Action) {
	for _, a := range rest {
		if a.Kind == eniplan.ActCreate {
			ex.births.settle(a.Nonce)
		}
	}
}

// createAndAttach creates the ENI for a want and attaches it.
func (ex *executor) createAndAttach(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	e, err := ex.create(ctx, ne, a)
	ex.metrics.op(eniplan.ActCreate, err)
	if ec2.IsRefused(err) {
		ex.births.settle(a.Nonce) // EC2 refused it: no ENI to wait for
	}
	if err != nil {
		return blockOrError(ev, a, "creating an ENI in subnet "+a.Want.Subnet, err)
	}
	log.FromContext(ctx).Info("created ENI", "node", a.Node, "eni", e.ID, "subnet", e.SubnetID)
	ev.add(corev1.EventTypeNormal, "Created", "Create", fmt.Sprintf("created ENI %s in subnet %s for node %s", e.ID, e.SubnetID, a.Node))
	a.ENI = e.ID
	ex.applied.set(e.ID, eniplan.HeldRecord(e.Tags, a.Tags)) // what it was created with is the operator's
	return ex.attachAndSet(ctx, ne, a, ev)
}

// attachAndSet attaches a new ENI, then sets what CreateNetworkInterface
// cannot: the source/destination check, when the spec turns it off (or
// on against EC2's default). Should the pass end before, the next one
// sets it as drift.
func (ex *executor) attachAndSet(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	b, err := ex.attach(ctx, ne, a, ev)
	check := ne.Spec.SourceDestCheck
	if b != nil || err != nil || check == nil {
		return b, err
	}
	if e, ok := ex.ec2.ENI(a.ENI); ok && e.SourceDestCheck == *check {
		return nil, nil
	}
	return ex.modify(ctx, eniplan.Action{Kind: eniplan.ActSetSourceDestCheck, Node: a.Node, Want: a.Want, ENI: a.ENI, Check: *check}, ev)
}

// modify fixes an attribute of an ENI in place (drift from the spec).
func (ex *executor) modify(ctx context.Context, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	var err error
	var what, eventAction, note string
	switch a.Kind {
	case eniplan.ActSetDOT:
		err = ex.ec2.SetDeleteOnTermination(ctx, a.ENI, a.AttachmentID, a.DOT)
		what = "setting DeleteOnTermination on " + a.ENI
	case eniplan.ActSetGroups:
		err = ex.ec2.SetSecurityGroups(ctx, a.ENI, a.Groups)
		what, eventAction = "setting the security groups of "+a.ENI, "SetSecurityGroups"
		note = fmt.Sprintf("security groups of ENI %s on node %s set to %s", a.ENI, a.Node, strings.Join(a.Groups, ","))
	case eniplan.ActSetDesc:
		err = ex.ec2.SetDescription(ctx, a.ENI, a.Description)
		what, eventAction = "setting the description of "+a.ENI, "SetDescription"
		note = fmt.Sprintf("description of ENI %s on node %s updated", a.ENI, a.Node)
	case eniplan.ActSetTags:
		what, err = ex.retag(ctx, a)
	case eniplan.ActSetSourceDestCheck:
		err = ex.ec2.SetSourceDestCheck(ctx, a.ENI, a.Check)
		what, eventAction = "setting the source/destination check of "+a.ENI, "SetSourceDestCheck"
		note = fmt.Sprintf("source/destination check of ENI %s on node %s set to %t", a.ENI, a.Node, a.Check)
	case eniplan.ActAssignIPs:
		err = ex.ec2.AssignPrivateIPs(ctx, a.ENI, a.Count)
		what, eventAction = fmt.Sprintf("assigning %d secondary private IPv4 addresses to %s", a.Count, a.ENI), "AssignPrivateIPs"
		note = fmt.Sprintf("assigned %d secondary private IPv4 addresses to ENI %s on node %s", a.Count, a.ENI, a.Node)
	}
	ex.metrics.op(a.Kind, err)
	if err != nil {
		return blockOrError(ev, a, what, err)
	}
	if note != "" {
		ev.add(corev1.EventTypeNormal, "Updated", eventAction, note)
	}
	return nil, nil
}

// detach starts detaching an ENI that is no longer wanted where it is.
func (ex *executor) detach(ctx context.Context, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	err := ex.ec2.DetachENI(ctx, a.ENI, a.AttachmentID, false)
	ex.metrics.op(a.Kind, err)
	switch {
	case ec2.IsNotFound(err):
		return nil, ex.reread(ctx, a.ENI) // already detached
	case err != nil:
		ex.metrics.cleanups.WithLabelValues(a.Reason, "failed").Inc()
		return blockOrError(ev, a, "detaching "+a.ENI, err)
	}
	log.FromContext(ctx).Info("detaching ENI", "node", a.Node, "eni", a.ENI, "reason", a.Reason)
	ev.add(corev1.EventTypeNormal, "Detaching", "Detach", fmt.Sprintf("detaching ENI %s from node %s (%s)", a.ENI, a.Node, a.Reason))
	return nil, nil
}

// create creates the ENI for a want, born proven: its tags carry the
// nonce its node's ENINode recorded (recordCreates) and the birth proof
// over it, and its ClientToken derives from the nonce.
func (ex *executor) create(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action) (awstypes.ENI, error) {
	by := eniplan.OwnedBy{Cluster: ex.cluster, NodeENI: ne.Name, UID: string(ne.UID), Base: int(ne.Spec.DeviceIndex), Created: ex.clock.Now()}
	tags := eniplan.OwnershipTags(by, a.Want, a.Index, a.Tags)
	tags[eniplan.TagNonce] = a.Nonce
	tags[eniplan.TagProof] = ex.trust.Keys.SignBirth(eniplan.BirthClaim(awstypes.ENI{SubnetID: a.Want.Subnet, Tags: tags}))
	e, err := ex.ec2.CreateENI(ctx, eniplan.CreateInput(&ne.Spec, a, tags, eniplan.ClientToken(a.Nonce)))
	if err != nil {
		return awstypes.ENI{}, err
	}
	ex.births.answered(a.Nonce, e.ID)
	ex.answers.answer(e.ID, ex.clock.Now())
	return e, nil
}

// attach attaches an ENI and sets DeleteOnTermination (EC2 attaches
// with false).
func (ex *executor) attach(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	id, err := ex.ec2.AttachENI(ctx, a.ENI, a.Want.Instance, a.Index, int(ne.Spec.NetworkCardIndex))
	ex.metrics.op(eniplan.ActAttach, err)
	switch {
	case ec2.IsNotFound(err) && strings.Contains(ec2.Code(err), "NetworkInterface"):
		var createdAt time.Time
		if e, ok := ex.ec2.ENI(a.ENI); ok {
			createdAt = eniplan.OwnedFrom(e).CreatedAt
		}
		if eniplan.MayBeUnseen(ex.clock.Now(), createdAt, ex.answers.last(a.ENI)) {
			// EC2 is eventually consistent: other calls may not know an
			// ENI created moments ago. Keep it and its token; the plan
			// still wants the attach, so the NodeENI is looked at again
			// in DetachPollInterval.
			log.FromContext(ctx).Info("ENI not known to EC2 yet; attaching it again shortly", "node", a.Node, "eni", a.ENI)
			return nil, nil
		}
		// The ENI is gone: forget it; the next pass creates afresh.
		ex.ec2.Forget(a.ENI)
		ex.answers.done(a.ENI)
		return nil, fmt.Errorf("ENI %s vanished before it was attached; creating another", a.ENI)
	case err != nil:
		return blockOrError(ev, a, fmt.Sprintf("attaching ENI %s to instance %s at device index %d", a.ENI, a.Want.Instance, a.Index), err)
	}
	ex.answers.done(a.ENI)
	log.FromContext(ctx).Info("attached ENI", "node", a.Node, "eni", a.ENI, "instance", a.Want.Instance, "deviceIndex", a.Index)
	ev.add(corev1.EventTypeNormal, "Attached", "Attach", fmt.Sprintf("attached ENI %s to node %s (instance %s) at device index %d", a.ENI, a.Node, a.Want.Instance, a.Index))
	if !a.DOT {
		return nil, nil
	}
	return ex.do(ctx, ne, eniplan.Action{Kind: eniplan.ActSetDOT, Node: a.Node, ENI: a.ENI, AttachmentID: id, DOT: true}, ev)
}

// remove deletes an available ENI that is no longer wanted.
func (ex *executor) remove(ctx context.Context, ne *v1alpha1.NodeENI, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	e, known := ex.ec2.ENI(a.ENI)
	err := ex.ec2.DeleteENI(ctx, a.ENI)
	ex.metrics.op(eniplan.ActDelete, err)
	switch {
	case ec2.IsNotFound(err) && known && eniplan.MayBeUnseen(ex.clock.Now(), eniplan.OwnedFrom(e).CreatedAt, ex.answers.last(a.ENI)):
		// Created moments ago, EC2 may not know it yet: deleted on a
		// later pass, its record kept meanwhile.
		log.FromContext(ctx).Info("ENI not known to EC2 yet; deleting it again shortly", "node", a.Node, "eni", a.ENI)
		return nil, nil
	case err == nil, ec2.IsNotFound(err):
		if n := e.Tags[eniplan.TagNonce]; known && n != "" {
			ex.births.settle(n)
		}
		ex.applied.forget(a.ENI)
		ex.answers.done(a.ENI)
		ex.metrics.cleanups.WithLabelValues(a.Reason, "deleted").Inc()
		log.FromContext(ctx).Info("deleted ENI", "node", a.Node, "eni", a.ENI, "reason", a.Reason)
		ev.add(corev1.EventTypeNormal, "Deleted", "Delete", fmt.Sprintf("deleted ENI %s of node %s (%s)", a.ENI, a.Node, a.Reason))
		return nil, nil
	case ec2.IsInUse(err):
		// Attached again meanwhile (by someone else): re-read it so the
		// next pass detaches it.
		return nil, ex.reread(ctx, a.ENI)
	}
	ex.metrics.cleanups.WithLabelValues(a.Reason, "failed").Inc()
	return blockOrError(ev, a, "deleting "+a.ENI, err)
}

// reread refreshes one ENI in the EC2 state (batched with other
// concurrent reads into one call); one that is gone is recorded so.
func (ex *executor) reread(ctx context.Context, id string) error {
	if _, err := ex.ec2.GetENI(ctx, id); err != nil && !ec2.IsNotFound(err) {
		return fmt.Errorf("reading ENI %s: %w", id, err)
	}
	return nil
}

// blockOrError turns an EC2 refusal into a block on the node (reported, not
// retried at once) or an error (retried with backoff).
func blockOrError(ev *nodeEvents, a eniplan.Action, what string, err error) (*eniplan.Blocked, error) {
	var reason string
	switch {
	case ec2.Code(err) == "PrivateIpAddressLimitExceeded", ec2.Code(err) == "Ipv6AddressLimitExceeded":
		reason = eniplan.ReasonAddressLimitExceeded
	case ec2.IsLimitExceeded(err):
		reason = eniplan.ReasonENILimitReached
	case ec2.Code(err) == "InvalidParameterValue" && strings.Contains(err.Error(), "device index"):
		reason = eniplan.ReasonDeviceIndexInUse
	case ec2.IsInvalid(err), ec2.IsUnauthorized(err), ec2.Code(err) == "IncorrectInstanceState":
		reason = eniplan.ReasonEC2Error
	default:
		return nil, fmt.Errorf("node %s: %s: %w", a.Node, what, err)
	}
	// EC2's code and message only: the request ID differs on every call,
	// and a status that changes on every pass is rewritten every pass.
	msg := fmt.Sprintf("%s: %s", what, ec2.Message(err))
	if ec2.IsUnauthorized(err) {
		msg += " (add the action to the operator's IAM policy; docs/iam.md)"
	}
	ev.add(corev1.EventTypeWarning, reason, a.Kind.String(), fmt.Sprintf("node %s: %s", a.Node, msg))
	return &eniplan.Blocked{Node: a.Node, Subnet: a.Want.Subnet, Reason: reason, Message: msg}, nil
}

// nodeEvents collects the events of one node's steps in a pass, so they
// are recorded as one event per node and action (see flush).
type nodeEvents struct {
	list []nodeEvent
}

type nodeEvent struct {
	eventType, reason, action string
	notes                     []string
}

func (e *nodeEvents) add(eventType, reason, act, note string) {
	for i := range e.list {
		if x := &e.list[i]; x.eventType == eventType && x.reason == reason && x.action == act {
			x.notes = append(x.notes, note)
			return
		}
	}
	e.list = append(e.list, nodeEvent{eventType: eventType, reason: reason, action: act, notes: []string{note}})
}

// flush records a node's events: one per reason and action, with
// the node as the related object. The event recorder folds events of
// the same object, type, reason, action and related object into one
// series that keeps the first note only, so without the node every
// node's "created ENI ..." after the first would be an invisible "(x20)",
// and without grouping a node's second ENI would be. Several steps of
// one kind on one node share a note, listed within the API's 1 KiB
// (the rest counted, never silently dropped).
func (ev *nodeEvents) flush(rec recorder.EventRecorder, ne *v1alpha1.NodeENI, node string) {
	if rec == nil {
		return
	}
	related := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for _, e := range ev.list {
		rec.Eventf(ne, related, e.eventType, e.reason, e.action, "%s", bounded.ListWithin(e.notes, "; ", len(e.notes), bounded.EventNote))
	}
}
