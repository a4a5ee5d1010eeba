package nodeeni

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// collector deletes leaked ENIs: operator-owned (the cluster's tag),
// available, and belonging to no existing NodeENI, e.g. after a NodeENI's
// finalizer was removed by hand or an operator crashed between a create
// and a cleanup. ENIs of an existing NodeENI are its reconciler's
// business; ENIs without the cluster's tag are never even listed.
//
// An ENI is deleted only once two consecutive inventory refreshes have
// shown it orphaned and available, and it is older than the grace
// period: a single glimpse can be a moment in a create-then-attach.
type collector struct {
	client  client.Reader
	ec2     EC2
	grace   time.Duration
	clock   clock.PassiveClock // Options.Clock: when candidates were seen
	metrics *metrics
	// refreshes receives a signal after each inventory refresh.
	refreshes chan struct{}

	log logr.Logger
	// trust is the trust check: only proven ENIs are collected, and only
	// a proven ENI's created-at counts.
	trust eniplan.TrustCheck
	// births is this process's evidence of the ENIs it created.
	births *births
	// dryRun: say what would be deleted, delete nothing.
	dryRun bool
	// distrusted logs each untrusted ENI skipped once per reason.
	distrusted *distrustLog

	// seen and wouldDelete are touched only by Start's goroutine.
	seen        map[string]*eniplan.Sighting
	wouldDelete map[string]bool
}

func newCollector(c client.Reader, state EC2, o Options, m *metrics) *collector {
	return &collector{client: c, ec2: state, grace: o.CollectorGracePeriod, clock: o.Clock, metrics: m,
		refreshes: make(chan struct{}, 1), seen: map[string]*eniplan.Sighting{}, wouldDelete: map[string]bool{}, distrusted: newDistrustLog()}
}

// notify tells the collector a refresh happened; it never blocks the
// inventory.
func (c *collector) notify() {
	select {
	case c.refreshes <- struct{}{}:
	default:
	}
}

// Start runs until ctx ends (manager.Runnable; leader only).
func (c *collector) Start(ctx context.Context) error {
	ctx = withLogger(ctx, c.log)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.refreshes:
			err := c.collect(ctx)
			if err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "collecting leaked ENIs; trying again after the next inventory refresh")
			}
			c.metrics.passes.WithLabelValues(resultOf(err)).Inc()
		}
	}
}

func (c *collector) collect(ctx context.Context) error {
	list := &v1alpha1.NodeENIList{}
	if err := c.client.List(ctx, list); err != nil {
		return err
	}
	live := map[string]bool{}
	for _, ne := range list.Items {
		live[string(ne.UID)] = true
	}
	all, taken := c.ec2.ENIsIn(InventoryScope)
	ev, err := c.births.everyRecord(ctx, c.client)
	if err != nil {
		return err
	}
	snap := eniplan.Snapshot{ENIs: c.trusted(ctx, all, ev), Taken: taken}
	doomed := eniplan.Orphans(snap, live, c.seen, c.clock.Now(), c.grace)
	would := map[string]bool{}
	for _, e := range doomed {
		if c.dryRun {
			// Said once per ENI, not at every refresh.
			would[e.ID] = true
			if !c.wouldDelete[e.ID] {
				c.metrics.cleanups.WithLabelValues(eniplan.CleanupOrphan, "dry-run").Inc()
				log.FromContext(ctx).Info("dry run: would delete leaked ENI", "eni", e.ID, "nodeeni", e.Tags[eniplan.TagNodeENI], "node", e.Tags[eniplan.TagNode])
			}
			continue
		}
		err := c.ec2.DeleteENI(ctx, e.ID)
		switch {
		case err == nil, ec2.IsNotFound(err):
			delete(c.seen, e.ID)
			c.metrics.cleanups.WithLabelValues(eniplan.CleanupOrphan, "deleted").Inc()
			log.FromContext(ctx).Info("deleted leaked ENI", "eni", e.ID, "nodeeni", e.Tags[eniplan.TagNodeENI], "node", e.Tags[eniplan.TagNode])
		default:
			c.metrics.cleanups.WithLabelValues(eniplan.CleanupOrphan, "failed").Inc()
			log.FromContext(ctx).Error(err, "deleting leaked ENI", "eni", e.ID)
		}
	}
	c.wouldDelete = would
	return nil
}

// trusted drops the ENIs that fail the trust check (trust.go): carrying
// the cluster's tag does not make an ENI the operator's to delete. Each
// is logged once per reason.
func (c *collector) trusted(ctx context.Context, all []awstypes.ENI, ev eniplan.Evidence) []awstypes.ENI {
	// The NodeENIs of orphans are gone: no name to compare with.
	out, v := eniplan.SplitTrusted(c.trust, all, func(e awstypes.ENI) awstypes.ENI { return e }, func(awstypes.ENI) string { return "" }, ev)
	for _, id := range c.distrusted.update("collector", v.Reasons) {
		log.FromContext(ctx).Info("not collecting an ENI that fails the trust check", "eni", id, "reason", v.Reasons[id], "detail", v.Details[id])
	}
	return out
}
