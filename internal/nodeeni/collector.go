package nodeeni

import (
	"context"
	"time"

	"github.com/eni-operator/eni-operator/internal/awstypes"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
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
	trust trustCheck
	// births is this process's evidence of the ENIs it created.
	births *births
	// dryRun: say what would be deleted, delete nothing.
	dryRun bool
	// distrusted logs each untrusted ENI skipped once per reason.
	distrusted *distrustLog

	// seen and wouldDelete are touched only by Start's goroutine.
	seen        map[string]*sighting
	wouldDelete map[string]bool
}

// sighting is what the collector remembers of an orphan candidate.
type sighting struct {
	first time.Time
	times int
	last  time.Time // the snapshot it was last seen in
}

func newCollector(c client.Reader, state EC2, o Options, m *metrics) *collector {
	return &collector{client: c, ec2: state, grace: o.CollectorGracePeriod, clock: o.Clock, metrics: m,
		refreshes: make(chan struct{}, 1), seen: map[string]*sighting{}, wouldDelete: map[string]bool{}, distrusted: newDistrustLog()}
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
	snap := snapshot{enis: c.trusted(ctx, all, ev), taken: taken}
	doomed := orphans(snap, live, c.seen, c.clock.Now(), c.grace)
	would := map[string]bool{}
	for _, e := range doomed {
		if c.dryRun {
			// Said once per ENI, not at every refresh.
			would[e.ID] = true
			if !c.wouldDelete[e.ID] {
				c.metrics.cleanups.WithLabelValues(CleanupOrphan, "dry-run").Inc()
				log.FromContext(ctx).Info("dry run: would delete leaked ENI", "eni", e.ID, "nodeeni", e.Tags[TagNodeENI], "node", e.Tags[TagNode])
			}
			continue
		}
		err := c.ec2.DeleteENI(ctx, e.ID)
		switch {
		case err == nil, ec2.IsNotFound(err):
			delete(c.seen, e.ID)
			c.metrics.cleanups.WithLabelValues(CleanupOrphan, "deleted").Inc()
			log.FromContext(ctx).Info("deleted leaked ENI", "eni", e.ID, "nodeeni", e.Tags[TagNodeENI], "node", e.Tags[TagNode])
		default:
			c.metrics.cleanups.WithLabelValues(CleanupOrphan, "failed").Inc()
			log.FromContext(ctx).Error(err, "deleting leaked ENI", "eni", e.ID)
		}
	}
	c.wouldDelete = would
	return nil
}

// trusted drops the ENIs that fail the trust check (trust.go): carrying
// the cluster's tag does not make an ENI the operator's to delete. Each
// is logged once per reason.
func (c *collector) trusted(ctx context.Context, all []awstypes.ENI, ev evidence) []awstypes.ENI {
	// The NodeENIs of orphans are gone: no name to compare with.
	out, v := splitTrusted(c.trust, all, func(e awstypes.ENI) awstypes.ENI { return e }, func(awstypes.ENI) string { return "" }, ev)
	for _, id := range c.distrusted.update("collector", v.reasons) {
		log.FromContext(ctx).Info("not collecting an ENI that fails the trust check", "eni", id, "reason", v.reasons[id], "detail", v.details[id])
	}
	return out
}

// snapshot is one inventory refresh's ENIs (those that pass the trust
// check) and when it was taken.
type snapshot struct {
	enis  []awstypes.ENI
	taken time.Time
}

// orphans updates the sightings with one snapshot and returns the ENIs to
// delete now; live holds the UIDs of the NodeENIs that exist. It is pure
// but for the sightings map it maintains.
func orphans(snap snapshot, live map[string]bool, seen map[string]*sighting, now time.Time, grace time.Duration) []awstypes.ENI {
	var out []awstypes.ENI
	current := map[string]bool{}
	for _, e := range snap.enis {
		if live[e.Tags[TagNodeENIUID]] || e.Attachment != nil || e.Status != "available" {
			continue
		}
		current[e.ID] = true
		s, ok := seen[e.ID]
		if !ok {
			s = &sighting{first: now}
			seen[e.ID] = s
		}
		if !s.last.Equal(snap.taken) {
			s.times++
			s.last = snap.taken
		}
		born := s.first
		if t := ownedFrom(e).CreatedAt; !t.IsZero() && t.Before(born) {
			born = t
		}
		if s.times >= 2 && now.Sub(born) >= grace && now.Sub(s.first) > 0 {
			out = append(out, e)
		}
	}
	for id := range seen {
		if !current[id] {
			delete(seen, id) // adopted, attached or gone: start over if it comes back
		}
	}
	return out
}
