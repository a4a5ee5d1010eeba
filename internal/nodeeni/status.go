package nodeeni

import (
	"context"
	"crypto/sha256"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// statusFor computes the status a pass describes: counts and
// conditions, and of the deprecated status.attachments the entries of
// legacy. The ENIs themselves are in the ENINodes.
func statusFor(ps pass, legacy []v1alpha1.ENIAttachment) v1alpha1.NodeENIStatus {
	st := *ps.ne.Status.DeepCopy()
	st.ObservedGeneration = ps.ne.Generation
	blocks := eniplan.RootCauses(ps.blocks, ps.in.NodeInstances, len(ps.in.CIDRs) > 0)
	st.DesiredNodes = int32(eniplan.DesiredNodes(ps.in, blocks, ps.deleting))
	st.ReadyNodes = int32(ps.After.ReadyNodes)
	st.Attachments = legacy
	if !ps.deleting {
		st.Subnets, st.SecurityGroups = eniplan.ResolvedStatus(ps.in.Subnets), ps.in.SecurityGroups
	}
	c := eniplan.Conditions{St: &st, Generation: ps.ne.Generation}
	c.Set(ps.After, blocks, ps.pending, ps.deleting)
	if !ps.deleting {
		meta.SetStatusCondition(&st.Conditions, eniplan.SelectionCondition(eniplan.DiffSelection(ps.in), ps.ne.Generation))
	}
	meta.SetStatusCondition(&st.Conditions, eniplan.OwnershipCondition(ps.in.Distrusted, ps.in.Prove, ps.ne.Generation))
	return st
}

// statusWriter writes a pass's outcome: the NodeENI's shares of the
// ENINodes, then its status.
type statusWriter struct {
	client     client.Client
	live       client.Reader // past the cache: after a conflict
	eniNodes   eniNodes
	report     reporter
	metrics    *metrics
	own        *ownWrites
	clock      clock.PassiveClock
	agentGrace time.Duration // --nodeeni-agent-report-grace-period
}

// write writes the plan's entries to the nodes' ENINodes and
// patches the NodeENI's status when it changed, and tells of new
// degradations once (event + log) rather than on every pass. It returns
// when the InterfacesConfigured condition should be looked at again (0:
// only on events): a missing agent report is named once its grace period
// is over, which no event announces.
//
// The pass's dry-run summary of what the plan would do ("" when not in
// dry-run or nothing would be done) becomes the Progressing condition
// (reason DryRun), and an event and a log line when it changed.
func (sw statusWriter) write(ctx context.Context, ps pass) (time.Duration, error) {
	ne, dry := ps.ne, ps.Dry
	now := metav1.NewTime(sw.clock.Now())
	held, err := sw.eniNodes.held(ctx, ne.Name)
	if err != nil {
		return 0, err
	}
	planned := eniplan.PlannedShares{Entries: ps.After.Attachments, Update: sw.eniNodes.updateCreates(string(ne.UID), ps.After.Attachments)}
	entries, err := sw.eniNodes.writeShares(ctx, ne.Name, planned, held, now)
	if err != nil {
		return 0, err
	}
	st := statusFor(ps, eniplan.Unswitched(ps.Legacy, ne.Status.Attachments, ps.in.ENIs, held))
	if dry != "" {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: eniplan.ReasonDryRun, Message: dry, ObservedGeneration: ne.Generation})
		if old := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionProgressing); old == nil || old.Reason != eniplan.ReasonDryRun || old.Message != dry {
			log.FromContext(ctx).Info("dry run: EC2 changes not made", "detail", dry)
			sw.report.event(ne, corev1.EventTypeNormal, eniplan.ReasonDryRun, "Reconcile", dry)
		}
	}
	// The agents' reports as the ENINodes hold them; the writes above
	// change only the operator's entries.
	configured, recheck := eniplan.InterfacesCondition(entries, eniplan.ReportsOf(held), ne.Generation, now.Time, sw.agentGrace)
	meta.SetStatusCondition(&st.Conditions, configured)
	sw.metrics.perNodeENI.WithLabelValues(ne.Name, "attached").Set(float64(eniplan.CountStatus(entries, v1alpha1.AttachmentAttached)))
	sw.metrics.perNodeENI.WithLabelValues(ne.Name, "pending").Set(float64(len(entries) - eniplan.CountStatus(entries, v1alpha1.AttachmentAttached)))
	failed := 0
	for _, b := range ps.blocks {
		if !b.Transient() {
			failed++
		}
	}
	sw.metrics.perNodeENI.WithLabelValues(ne.Name, "failed").Set(float64(failed))
	if equality.Semantic.DeepEqual(st, ne.Status) {
		// The usual outcome of an agent's report: the aggregate did not
		// change, so nothing is written.
		sw.own.remember(ne.Name, st)
		return recheck, nil
	}
	oldDeg := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionDegraded)
	newDeg := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	if newDeg.Status == metav1.ConditionTrue && (oldDeg == nil || oldDeg.Message != newDeg.Message) {
		log.FromContext(ctx).Info("NodeENI degraded", "reason", newDeg.Reason, "detail", newDeg.Message)
		sw.report.event(ne, corev1.EventTypeWarning, newDeg.Reason, "Reconcile", newDeg.Message)
	}
	sw.report.selection(ctx, ne, st)
	// Remembered before the write: its watch event may come first.
	sw.own.remember(ne.Name, st)
	if err := sw.patch(ctx, ne, st); err != nil {
		sw.own.forget(ne.Name)
		return recheck, err
	}
	return recheck, nil
}

// patch writes st under an optimistic lock: a merge patch replaces
// the whole conditions list, so a write from a stale read would drop
// another writer's condition. When another writer got there first, the
// NodeENI's status is read again, its conditions of the other types
// taken into st, and the write made again (a few times at most).
func (sw statusWriter) patch(ctx context.Context, ne *v1alpha1.NodeENI, st v1alpha1.NodeENIStatus) error {
	for attempt := 1; ; attempt++ {
		old := ne.DeepCopy()
		ne.Status = st
		err := sw.client.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
		if err == nil || !apierrors.IsConflict(err) || attempt == 3 {
			return err
		}
		fresh := &v1alpha1.NodeENI{}
		if err := sw.live.Get(ctx, client.ObjectKeyFromObject(ne), fresh); err != nil {
			return err
		}
		// Only the version and status: the pass still acts on the spec it read.
		ne.ResourceVersion, ne.Status = fresh.ResourceVersion, fresh.Status
		st.Conditions = eniplan.WithOthersConditions(st.Conditions, fresh.Status.Conditions)
	}
}

// ownWrites remembers, per key, a digest of what this process last
// wrote or found as planned: the controller's part of a NodeENI's status
// (key: its name) or its share of an ENINode (ShareKey). Anyone allowed
// to write those can rewrite them, and the agents act on the shares; an
// update that makes one differ from what is remembered is someone
// else's and is reconciled at once, which writes the plan back. The
// controller's own writes match and wake nobody up. The digest is of the
// JSON, the API's form (times in seconds).
type ownWrites struct {
	mu      sync.Mutex
	digests map[string][sha256.Size]byte
}

func newOwnWrites() *ownWrites { return &ownWrites{digests: map[string][sha256.Size]byte{}} }

func (o *ownWrites) remember(key string, v any) {
	if o == nil {
		return
	}
	d := eniplan.DigestOf(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.digests[key] = d
}

func (o *ownWrites) forget(key string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.digests, key)
}

// forgetWhere forgets every key that matches.
func (o *ownWrites) forgetWhere(match func(key string) bool) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	maps.DeleteFunc(o.digests, func(key string, _ [sha256.Size]byte) bool { return match(key) })
}

// foreign tells whether v is not what this process last wrote or planned
// under key (nothing remembered: foreign).
func (o *ownWrites) foreign(key string, v any) bool {
	if o == nil {
		return true
	}
	d := eniplan.DigestOf(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	last, ok := o.digests[key]
	return !ok || last != d
}
