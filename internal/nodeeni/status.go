package nodeeni

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

// maxListedNodes bounds the nodes a condition message names.
const maxListedNodes = 10

// Condition reasons besides the block reasons of plan.go.
const (
	ReasonAttached        = "Attached"
	ReasonNoMatchingNodes = "NoMatchingNodes"
	ReasonProgressing     = "Progressing"
	ReasonDeleting        = "Deleting"
	ReasonStable          = "Stable"
	ReasonHealthy         = "Healthy"
)

// statusFor computes the status a pass describes: counts and
// conditions, and of the deprecated status.attachments the entries of
// legacy. The ENIs themselves are in the ENINodes.
func statusFor(ps pass, legacy []v1alpha1.ENIAttachment) v1alpha1.NodeENIStatus {
	st := *ps.ne.Status.DeepCopy()
	st.ObservedGeneration = ps.ne.Generation
	blocks := rootCauses(ps.blocks, ps.in.NodeInstances, len(ps.in.CIDRs) > 0)
	st.DesiredNodes = int32(desiredNodes(ps.in, blocks, ps.deleting))
	st.ReadyNodes = int32(ps.after.ReadyNodes)
	st.Attachments = legacy
	if !ps.deleting {
		st.Subnets, st.SecurityGroups = resolvedStatus(ps.in.Subnets), ps.in.SecurityGroups
	}
	c := conditions{st: &st, generation: ps.ne.Generation}
	c.set(ps.after, blocks, ps.pending, ps.deleting)
	if !ps.deleting {
		meta.SetStatusCondition(&st.Conditions, selectionCondition(diffSelection(ps.in), ps.ne.Generation))
	}
	meta.SetStatusCondition(&st.Conditions, ownershipCondition(ps.in.Distrusted, ps.in.Prove, ps.ne.Generation))
	return st
}

func resolvedStatus(subnets []subnetInfo) []v1alpha1.ResolvedSubnet {
	var out []v1alpha1.ResolvedSubnet
	for _, s := range subnets {
		out = append(out, v1alpha1.ResolvedSubnet{ID: s.ID, Zone: s.Zone, CIDR: s.CIDR, IPv6CIDR: s.IPv6CIDR})
	}
	return out
}

// desiredNodes counts the matching nodes: those on EC2 and, unless the
// NodeENI is going, those reported blocked (not on EC2, say).
func desiredNodes(in planInput, blocks []blocked, deleting bool) int {
	nodes := map[string]bool{}
	for n := range in.NodeInstances {
		nodes[n] = true
	}
	for _, b := range blocks {
		if b.Node != "" && !deleting {
			nodes[b.Node] = true // matching nodes not on EC2 are desired too
		}
	}
	return len(nodes)
}

// attachmentsSince stamps the plan's entries: now for new or changed
// ones, their previous time for the others.
func attachmentsSince(old, planned []v1alpha1.ENIAttachment, now metav1.Time) []v1alpha1.ENIAttachment {
	prev := map[string]v1alpha1.ENIAttachment{}
	for _, a := range old {
		prev[a.ENIID] = a
	}
	var out []v1alpha1.ENIAttachment
	for _, a := range planned {
		a.LastUpdated = now
		if o, ok := prev[a.ENIID]; ok {
			same := o
			same.LastUpdated = now
			if equality.Semantic.DeepEqual(same, a) {
				a.LastUpdated = o.LastUpdated
			}
		}
		out = append(out, a)
	}
	return out
}

// conditions sets Degraded, Progressing and Ready on a status.
type conditions struct {
	st         *v1alpha1.NodeENIStatus
	generation int64
}

func (c conditions) put(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&c.st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.generation})
}

// set splits the blocks into lasting (Degraded) and passing ones
// (Progressing) and derives Ready from them and the node counts.
func (c conditions) set(p plan, blocks []blocked, pending, deleting bool) {
	var hard, soft []blocked
	for _, b := range blocks {
		if b.transient() {
			soft = append(soft, b)
		} else {
			hard = append(hard, b)
		}
	}
	if len(hard) > 0 {
		c.put(v1alpha1.ConditionDegraded, metav1.ConditionTrue, dominantReason(hard), describe(hard))
	} else {
		c.put(v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonHealthy, "")
	}
	progressing := pending || len(soft) > 0
	switch {
	case deleting:
		c.put(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonDeleting, fmt.Sprintf("removing %d ENIs before the NodeENI is deleted", len(p.Attachments)))
	case len(soft) > 0:
		c.put(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonProgressing, describe(soft))
	case progressing:
		c.put(v1alpha1.ConditionProgressing, metav1.ConditionTrue, ReasonProgressing, "creating, attaching or removing ENIs")
	default:
		c.put(v1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonStable, "")
	}
	c.ready(deleting, len(hard) > 0, progressing)
}

func (c conditions) ready(deleting, degraded, progressing bool) {
	desired, ready := c.st.DesiredNodes, c.st.ReadyNodes
	switch {
	case deleting:
		c.put(v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonDeleting, "the NodeENI is being deleted")
	case desired == 0:
		c.put(v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonNoMatchingNodes, "no node matches the nodeSelector")
	case ready == desired && !degraded && !progressing:
		c.put(v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAttached, fmt.Sprintf("all %d nodes have their ENIs attached", desired))
	case degraded:
		c.put(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ConditionDegraded, fmt.Sprintf("%d of %d nodes ready; see the Degraded condition", ready, desired))
	default:
		c.put(v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing, fmt.Sprintf("%d of %d nodes ready", ready, desired))
	}
}

// dominantReason is the most frequent reason (ties: alphabetical).
func dominantReason(bs []blocked) string {
	count := map[string]int{}
	for _, b := range bs {
		count[b.Reason]++
	}
	best := ""
	for r, n := range count {
		if best == "" || n > count[best] || (n == count[best] && r < best) {
			best = r
		}
	}
	return best
}

// describe summarises blocks for a condition message and its event:
// blocks with the same reason and message are one line naming their
// nodes ("nodes a, b, c, d, e and 15 more: SubnetNotFound: ..."), lines
// in node order, at most maxListedNodes of them and at most
// bounded.EventNote bytes in all, the rest counted ("and 3 more"). Every
// block is named or counted, none silently dropped, and the message fits
// in an event.
func describe(bs []blocked) string {
	sorted := append([]blocked(nil), bs...)
	slices.SortStableFunc(sorted, func(a, b blocked) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.Subnet, b.Subnet))
	})
	type group struct {
		what  string
		nodes []string
	}
	var groups []*group
	byWhat := map[string]*group{}
	for _, b := range sorted {
		what := b.Reason + ": " + b.Message
		g, ok := byWhat[what]
		if !ok {
			g = &group{what: what}
			byWhat[what] = g
			groups = append(groups, g)
		}
		if b.Node != "" && !slices.Contains(g.nodes, b.Node) {
			g.nodes = append(g.nodes, b.Node)
		}
	}
	lines := make([]string, len(groups))
	for i, g := range groups {
		switch len(g.nodes) {
		case 0:
			lines[i] = g.what
		case 1:
			lines[i] = "node " + g.nodes[0] + ": " + g.what
		default:
			lines[i] = "nodes " + bounded.List(g.nodes, ", ", bounded.Items) + ": " + g.what
		}
	}
	return bounded.ListWithin(lines, "; ", maxListedNodes, bounded.EventNote)
}

// writeStatus writes the plan's entries to the nodes' ENINodes and
// patches the NodeENI's status when it changed, and tells of new
// degradations once (event + log) rather than on every pass. It returns
// when the InterfacesConfigured condition should be looked at again (0:
// only on events): a missing agent report is named once its grace period
// is over, which no event announces.
//
// The pass's dry-run summary of what the plan would do ("" when not in
// dry-run or nothing would be done) becomes the Progressing condition
// (reason DryRun), and an event and a log line when it changed.
func (r *reconciler) writeStatus(ctx context.Context, ps pass) (time.Duration, error) {
	ne, dry := ps.ne, ps.dry
	now := metav1.Now()
	held, err := r.held(ctx, ne.Name)
	if err != nil {
		return 0, err
	}
	planned := plannedShares{entries: ps.after.Attachments, update: r.updateCreates(string(ne.UID), ps.after.Attachments)}
	entries, err := r.writeShares(ctx, ne.Name, planned, held, now)
	if err != nil {
		return 0, err
	}
	st := statusFor(ps, unswitched(ps.legacy, ne.Status.Attachments, ps.in.ENIs, held))
	if dry != "" {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
			Reason: ReasonDryRun, Message: dry, ObservedGeneration: ne.Generation})
		if old := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionProgressing); old == nil || old.Reason != ReasonDryRun || old.Message != dry {
			log.FromContext(ctx).Info("dry run: EC2 changes not made", "detail", dry)
			r.event(ne, corev1.EventTypeNormal, ReasonDryRun, "Reconcile", dry)
		}
	}
	// The agents' reports as the ENINodes hold them; the writes above
	// change only the operator's entries.
	configured, recheck := interfacesCondition(entries, reportsOf(held), ne.Generation, now.Time, r.opts.AgentReportGracePeriod)
	meta.SetStatusCondition(&st.Conditions, configured)
	r.metrics.perNodeENI.WithLabelValues(ne.Name, "attached").Set(float64(countStatus(entries, v1alpha1.AttachmentAttached)))
	r.metrics.perNodeENI.WithLabelValues(ne.Name, "pending").Set(float64(len(entries) - countStatus(entries, v1alpha1.AttachmentAttached)))
	failed := 0
	for _, b := range ps.blocks {
		if !b.transient() {
			failed++
		}
	}
	r.metrics.perNodeENI.WithLabelValues(ne.Name, "failed").Set(float64(failed))
	if equality.Semantic.DeepEqual(st, ne.Status) {
		// The usual outcome of an agent's report: the aggregate did not
		// change, so nothing is written.
		r.own.remember(ne.Name, st)
		return recheck, nil
	}
	oldDeg := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionDegraded)
	newDeg := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded)
	if newDeg.Status == metav1.ConditionTrue && (oldDeg == nil || oldDeg.Message != newDeg.Message) {
		log.FromContext(ctx).Info("NodeENI degraded", "reason", newDeg.Reason, "detail", newDeg.Message)
		r.event(ne, corev1.EventTypeWarning, newDeg.Reason, "Reconcile", newDeg.Message)
	}
	r.tellSelection(ctx, ne, st)
	// Remembered before the write: its watch event may come first.
	r.own.remember(ne.Name, st)
	if err := r.patchStatus(ctx, ne, st); err != nil {
		r.own.forget(ne.Name)
		return recheck, err
	}
	return recheck, nil
}

// ownConditions are the condition types the NodeENI controller writes;
// attachdefs and podaddrs own the others.
func ownConditions() []string {
	return []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded, v1alpha1.ConditionInterfacesConfigured,
		v1alpha1.ConditionSelectionChanged, v1alpha1.ConditionOwnershipVerified}
}

// patchStatus writes st under an optimistic lock: a merge patch replaces
// the whole conditions list, so a write from a stale read would drop
// another writer's condition. When another writer got there first, the
// NodeENI's status is read again, its conditions of the other types
// taken into st, and the write made again (a few times at most).
func (r *reconciler) patchStatus(ctx context.Context, ne *v1alpha1.NodeENI, st v1alpha1.NodeENIStatus) error {
	for attempt := 1; ; attempt++ {
		old := ne.DeepCopy()
		ne.Status = st
		err := r.client.Status().Patch(ctx, ne, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{}))
		if err == nil || !apierrors.IsConflict(err) || attempt == 3 {
			return err
		}
		fresh := &v1alpha1.NodeENI{}
		if err := r.live.Get(ctx, client.ObjectKeyFromObject(ne), fresh); err != nil {
			return err
		}
		// Only the version and status: the pass still acts on the spec it read.
		ne.ResourceVersion, ne.Status = fresh.ResourceVersion, fresh.Status
		st.Conditions = withOthersConditions(st.Conditions, fresh.Status.Conditions)
	}
}

// withOthersConditions keeps the controller's own conditions of mine and
// every other condition as theirs has it.
func withOthersConditions(mine, theirs []metav1.Condition) []metav1.Condition {
	own := ownConditions()
	out := slices.DeleteFunc(slices.Clone(mine), func(c metav1.Condition) bool { return !slices.Contains(own, c.Type) })
	for _, c := range theirs {
		if !slices.Contains(own, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// ownWrites remembers, per key, a digest of what this process last
// wrote or found as planned: the controller's part of a NodeENI's status
// (key: its name) or its share of an ENINode (shareKey). Anyone allowed
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

func digestOf(v any) [sha256.Size]byte {
	b, _ := json.Marshal(v) // plain data: cannot fail
	return sha256.Sum256(b)
}

func (o *ownWrites) remember(key string, v any) {
	if o == nil {
		return
	}
	d := digestOf(v)
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
	d := digestOf(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	last, ok := o.digests[key]
	return !ok || last != d
}

func countStatus(as []v1alpha1.ENIAttachment, s string) int {
	n := 0
	for _, a := range as {
		if a.Status == s {
			n++
		}
	}
	return n
}
