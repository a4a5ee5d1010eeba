package nodeeni

import (
	"context"
	"maps"
	"sync"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// retag sets and removes an ENI's user tags, then records the outcome.
// EC2 first, the record after: a crash or a failed write in between
// leaves a tag written but unrecorded (kept for good), or a removed tag
// still recorded (not on the ENI any more, so dropped from the record),
// never a record of a tag the operator did not write.
func (ex *executor) retag(ctx context.Context, a eniplan.Action) (string, error) {
	if err := ex.ec2.CreateTags(ctx, a.ENI, a.Tags); err != nil {
		return "tagging " + a.ENI, err
	}
	if err := ex.ec2.DeleteTags(ctx, a.ENI, a.Remove); err != nil {
		// Not removed: still the operator's.
		rec := maps.Clone(a.Record)
		if rec == nil {
			rec = map[string]string{}
		}
		maps.Copy(rec, a.Remove)
		ex.applied.set(a.ENI, rec)
		return "removing tags from " + a.ENI, err
	}
	ex.applied.set(a.ENI, a.Record)
	return "", nil
}

// appliedTags holds the records this process wrote EC2 for but may not
// see in the ENINodes yet (the write after the EC2 call failed, or the
// cache is behind): they stand in for the ENINode's until it agrees.
type appliedTags struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func newAppliedTags() *appliedTags { return &appliedTags{m: map[string]map[string]string{}} }

func (t *appliedTags) set(eni string, rec map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[eni] = maps.Clone(rec)
}

func (t *appliedTags) forget(eni string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, eni)
}

// records are the NodeENI's records of its ENIs: each ENINode's (read
// from spec.attachments of the ENI's own node only) or, where this
// process wrote one the ENINode does not show yet, that one. A record
// the ENINode shows (as far as the ENI still carries it) is no longer
// held here.
func (t *appliedTags) records(nodeENI string, held map[string]*v1alpha1.ENINode, enis []eniplan.Owned) map[string]map[string]string {
	out := map[string]map[string]string{}
	for node, en := range held {
		for _, a := range eniplan.ShareOf(en, nodeENI) {
			if a.NodeID == node && len(a.AppliedTags) > 0 {
				out[a.ENIID] = a.AppliedTags
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range enis {
		mine, ok := t.m[o.ID]
		switch {
		case !ok:
		case maps.Equal(eniplan.HeldRecord(o.Tags, mine), out[o.ID]):
			delete(t.m, o.ID)
		default:
			out[o.ID] = mine
		}
	}
	return out
}

// overlay puts the records this process holds over in's, after actions.
func (t *appliedTags) overlay(in *eniplan.PlanInput) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := maps.Clone(in.Recorded)
	if out == nil {
		out = map[string]map[string]string{}
	}
	for _, o := range in.ENIs {
		if mine, ok := t.m[o.ID]; ok {
			out[o.ID] = mine
		}
	}
	in.Recorded = out
}
