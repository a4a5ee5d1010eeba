package eniplan

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func ResolvedStatus(subnets []SubnetInfo) []v1alpha1.ResolvedSubnet {
	var out []v1alpha1.ResolvedSubnet
	for _, s := range subnets {
		out = append(out, v1alpha1.ResolvedSubnet{ID: s.ID, Zone: s.Zone, CIDR: s.CIDR, IPv6CIDR: s.IPv6CIDR})
	}
	return out
}

// DesiredNodes counts the matching nodes: those on EC2 and, unless the
// NodeENI is going, those reported blocked (not on EC2, say).
func DesiredNodes(in PlanInput, blocks []Blocked, deleting bool) int {
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

// AttachmentsSince stamps the plan's entries: now for new or changed
// ones, their previous time for the others.
func AttachmentsSince(old, planned []v1alpha1.ENIAttachment, now metav1.Time) []v1alpha1.ENIAttachment {
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

// Conditions sets Degraded, Progressing and Ready on a status.
type Conditions struct {
	St         *v1alpha1.NodeENIStatus
	Generation int64
}

func (c Conditions) put(t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&c.St.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
}

// Set splits the blocks into lasting (Degraded) and passing ones
// (Progressing) and derives Ready from them and the node counts.
func (c Conditions) Set(p Plan, blocks []Blocked, pending, deleting bool) {
	var hard, soft []Blocked
	for _, b := range blocks {
		if b.Transient() {
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

func (c Conditions) ready(deleting, degraded, progressing bool) {
	desired, ready := c.St.DesiredNodes, c.St.ReadyNodes
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
func dominantReason(bs []Blocked) string {
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
func describe(bs []Blocked) string {
	sorted := append([]Blocked(nil), bs...)
	slices.SortStableFunc(sorted, func(a, b Blocked) int {
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

// ownConditions are the condition types the NodeENI controller writes;
// attachdefs and podaddrs own the others.
func ownConditions() []string {
	return []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded, v1alpha1.ConditionInterfacesConfigured,
		v1alpha1.ConditionSelectionChanged, v1alpha1.ConditionOwnershipVerified}
}

// WithOthersConditions keeps the controller's own conditions of mine and
// every other condition as theirs has it.
func WithOthersConditions(mine, theirs []metav1.Condition) []metav1.Condition {
	own := ownConditions()
	out := slices.DeleteFunc(slices.Clone(mine), func(c metav1.Condition) bool { return !slices.Contains(own, c.Type) })
	for _, c := range theirs {
		if !slices.Contains(own, c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func DigestOf(v any) [sha256.Size]byte {
	b, _ := json.Marshal(v) // plain data: cannot fail
	return sha256.Sum256(b)
}

func CountStatus(as []v1alpha1.ENIAttachment, s string) int {
	n := 0
	for _, a := range as {
		if a.Status == s {
			n++
		}
	}
	return n
}
