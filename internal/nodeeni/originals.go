package nodeeni

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// originals finds aws-multi-eni-controller's ENIs. They carry none of this
// operator's tags, so the EC2 state's cluster scope does not hold them:
// one paginated DescribeNetworkInterfaces of the VPC filtered by the
// original's managed-by tag finds them all, for every NodeENI at once. It
// is made only while some NodeENI may still have ENIs to adopt
// (NeedsOriginals) and at most once per resync interval; concurrent
// callers share it. The listed ENIs are recorded in the EC2 state, which
// then holds their current picture (the adoption's tags applied).
type originals struct {
	mu  sync.Mutex
	ids []string
	at  time.Time // when the last listing started; zero before the first
}

// list returns the IDs of the original's ENIs, listing them again when
// the last listing is maxAge old or older.
func (o *originals) list(ctx context.Context, c EC2, now time.Time, maxAge time.Duration) ([]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.at.IsZero() && now.Sub(o.at) < maxAge {
		return o.ids, nil
	}
	at := now
	list, err := c.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.OriginalTagManagedBy, Values: []string{eniplan.OriginalManagedBy}})
	if err != nil {
		return nil, fmt.Errorf("listing aws-multi-eni-controller's ENIs: %w", err)
	}
	o.ids = make([]string, len(list))
	for i, e := range list {
		o.ids[i] = e.ID
	}
	o.at = at
	return o.ids, nil
}

// adopter plans the adoption of aws-multi-eni-controller's ENIs.
type adopter struct {
	client client.Client
	ec2    EC2
	opts   Options
	trust  eniplan.TrustCheck // its keys sign the adopted ENIs
	report reporter
	// originals lists the original's ENIs while any may be left to adopt.
	originals originals
}

// plan finds the NodeENI's ENIs of aws-multi-eni-controller and puts
// those that pass the adoption check (NotAdoptable) into the plan input:
// each as the ENI it will be once adopted, plus its adopt action. The
// others are reported (event and log, once per reason) and left alone. A
// NodeENI that just got its finalizer (fresh) has none of the original's.
func (ad *adopter) plan(ctx context.Context, ne *v1alpha1.NodeENI, fresh bool, in *eniplan.PlanInput) error {
	if fresh || !eniplan.NeedsOriginals(ne.Status, in.ENIs) {
		return nil
	}
	ids, err := ad.originals.list(ctx, ad.ec2, ad.opts.Clock.Now(), ad.opts.ResyncInterval)
	if err != nil {
		return err
	}
	records := in.Legacy.Counted()
	ev, err := ad.evidence(ctx, ne, records)
	if err != nil {
		return err
	}
	ours := map[string]bool{}
	for _, o := range in.ENIs {
		ours[o.ID] = true
	}
	reasons, details := map[string]string{}, map[string]string{}
	by := eniplan.OwnedBy{Cluster: ad.opts.ClusterName, NodeENI: ne.Name, UID: string(ne.UID), Base: in.Base,
		Created: ad.opts.Clock.Now().UTC().Truncate(time.Second)}
	for _, id := range candidates(ad.ec2, ne.Name, records, ids) {
		e, found := ad.ec2.ENI(id)
		switch {
		case ours[id], found && e.Tags[eniplan.TagCluster] == ad.opts.ClusterName:
			continue // this operator's already (adopted before, or the trust check reports it)
		case !found:
			reasons[id], details[id] = eniplan.NotAdoptedNotFound, "the status names it, but no ENI with aws-multi-eni-controller's tags has this ID in the cluster's VPC"
			continue
		}
		if reason, detail := eniplan.NotAdoptable(e, ev); reason != "" {
			reasons[id], details[id] = reason, detail
			continue
		}
		a, o := eniplan.Adoption(e, by, in.Tags)
		// The proof goes in the same CreateTags as the ownership tags.
		proof := eniplan.ProofTag(ad.trust.Keys, awstypes.ENI{ID: e.ID, Tags: a.Tags})
		maps.Copy(a.Tags, proof)
		maps.Copy(o.Tags, proof)
		in.Adopt = append(in.Adopt, a)
		in.ENIs = append(in.ENIs, o)
	}
	ad.report.notAdopted(ctx, ne, eniplan.Verdicts{Reasons: reasons, Details: details})
	return nil
}

// candidates are the ENIs that claim to be the NodeENI's by the
// original's tags, and those its counted status entries name, sorted.
func candidates(c EC2, nodeENI string, records []v1alpha1.ENIAttachment, listed []string) []string {
	var out []string
	for _, id := range listed {
		if e, ok := c.ENI(id); ok && e.Tags[eniplan.OriginalTagNodeENI] == nodeENI {
			out = append(out, id)
		}
	}
	for _, a := range records {
		out = append(out, a.ENIID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// evidence gathers what the adoption check weighs: the VPC's
// subnets (the catalog, cached), every node's instance (the informer's
// cache) and the NodeENI's status entries that still count (eniplan.LegacyStatus).
func (ad *adopter) evidence(ctx context.Context, ne *v1alpha1.NodeENI, records []v1alpha1.ENIAttachment) (eniplan.AdoptionEvidence, error) {
	ev := eniplan.AdoptionEvidence{NodeENI: ne.Name, Subnets: map[string]string{}, Nodes: map[string]string{},
		Records: map[string]v1alpha1.ENIAttachment{}, Description: ne.Spec.Description}
	cat, err := ad.ec2.Catalog(ctx, ad.opts.CatalogInterval)
	if err != nil {
		return ev, err
	}
	for _, s := range cat.Subnets {
		ev.Subnets[s.ID] = s.VPCID
	}
	nodes := &corev1.NodeList{}
	if err := ad.client.List(ctx, nodes); err != nil {
		return ev, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		ev.Nodes[n.Name] = ""
		ev.Nodes[n.Name], _ = awsnode.Instance(n)
	}
	for _, a := range records {
		ev.Records[a.ENIID] = a
	}
	return ev, nil
}

// adoptENI writes an adopted ENI's ownership tags: one CreateTags.
func (ex *executor) adoptENI(ctx context.Context, a eniplan.Action, ev *nodeEvents) (*eniplan.Blocked, error) {
	err := ex.ec2.CreateTagsAlone(ctx, a.ENI, a.Tags)
	ex.metrics.op(eniplan.ActAdopt, err)
	if err != nil {
		return blockOrError(ev, a, "adopting "+a.ENI+" (writing its ownership tags)", err)
	}
	// Only the user tags the adoption wrote are recorded (it writes those
	// the ENI lacks or holds otherwise): one the original's ENI already
	// carried with the same value may be another tool's, so it is never
	// removed.
	ex.applied.set(a.ENI, eniplan.HeldRecord(a.Tags, a.Tags))
	log.FromContext(ctx).Info("adopted ENI of aws-multi-eni-controller in place", "node", a.Node, "eni", a.ENI, "deviceIndex", a.Index)
	ev.add(corev1.EventTypeNormal, "Adopted", "Adopt",
		fmt.Sprintf("adopted ENI %s of aws-multi-eni-controller on node %s in place (device index %d kept)", a.ENI, a.Node, a.Index))
	return nil, nil
}
