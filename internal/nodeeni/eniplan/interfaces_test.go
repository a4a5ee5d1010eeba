package eniplan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

func TestInterfacesCondition(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := 2 * time.Minute
	att := func(node, eni, status string, age time.Duration) v1alpha1.ENIAttachment {
		return v1alpha1.ENIAttachment{NodeID: node, ENIID: eni, Status: status, LastUpdated: metav1.NewTime(now.Add(-age))}
	}
	rep := func(node, eni, state, msg string) nodeReport {
		return nodeReport{node, v1alpha1.InterfaceStatus{ENIID: eni, State: state, Message: msg, LastUpdated: metav1.NewTime(now)}}
	}
	const old = time.Hour // attached long ago: past the grace period
	cases := []struct {
		name        string
		attachments []v1alpha1.ENIAttachment
		interfaces  []nodeReport
		status      metav1.ConditionStatus
		reason      string
		contains    []string
		absent      []string
		recheck     time.Duration
	}{{
		name:   "nothing attached",
		status: metav1.ConditionUnknown, reason: ReasonNoAttachments,
	}, {
		name:        "only ENIs not attached yet or on their way out",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentCreated, old), att("n1", "eni-2", v1alpha1.AttachmentDetaching, old), att("n2", "eni-3", v1alpha1.AttachmentDeleting, old)},
		interfaces:  []nodeReport{rep("n1", "eni-2", v1alpha1.InterfaceFailed, "gone")},
		status:      metav1.ConditionUnknown, reason: ReasonNoAttachments,
	}, {
		name:        "all configured",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old), att("n1", "eni-2", v1alpha1.AttachmentAttached, old), att("n2", "eni-3", v1alpha1.AttachmentAttached, old)},
		interfaces: []nodeReport{rep("n2", "eni-3", v1alpha1.InterfaceConfigured, ""), rep("n1", "eni-2", v1alpha1.InterfaceConfigured, ""),
			rep("n1", "eni-1", v1alpha1.InterfaceConfigured, "")},
		status: metav1.ConditionTrue, reason: ReasonConfigured, contains: []string{"all 3 attached ENIs on 2 nodes"},
	}, {
		name:        "stale entries of detached ENIs and other nodes do not count",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old)},
		interfaces: []nodeReport{rep("n1", "eni-1", v1alpha1.InterfaceConfigured, ""), rep("n1", "eni-9", v1alpha1.InterfaceFailed, "old"),
			rep("n2", "eni-1", v1alpha1.InterfaceFailed, "moved")},
		status: metav1.ConditionTrue, reason: ReasonConfigured,
	}, {
		name:        "a report of another node does not stand for this one",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old)},
		interfaces:  []nodeReport{rep("n2", "eni-1", v1alpha1.InterfaceConfigured, "")},
		status:      metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"no report from eni-agent on node n1 for eni-1: is the eni-agent DaemonSet running there?"},
	}, {
		name:        "no report within the grace period: just pending, look again when it ends",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, 30*time.Second), att("n2", "eni-2", v1alpha1.AttachmentAttached, 90*time.Second)},
		status:      metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"2 of 2 attached ENIs not configured yet", "node n1: eni-1: waiting for the eni-agent's report", "node n2: eni-2: waiting"},
		absent:   []string{"DaemonSet"},
		recheck:  30 * time.Second,
	}, {
		name:        "no report past the grace period names the node",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old), att("n2", "eni-2", v1alpha1.AttachmentAttached, old)},
		interfaces:  []nodeReport{rep("n2", "eni-2", v1alpha1.InterfaceConfigured, "")},
		status:      metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"1 of 2 attached ENIs not configured yet: no report from eni-agent on node n1 for eni-1: is the eni-agent DaemonSet running there?"},
		absent:   []string{"n2"},
	}, {
		name:        "the grace period ends exactly now",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, grace)},
		status:      metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"no report from eni-agent on node n1"},
	}, {
		name:        "pending reported by the agent quotes it, whatever the age",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old), att("n2", "eni-2", v1alpha1.AttachmentAttached, time.Second)},
		interfaces: []nodeReport{rep("n1", "eni-1", v1alpha1.InterfacePending, "no link with MAC 02:00:00:00:00:01 yet"),
			rep("n2", "eni-2", v1alpha1.InterfacePending, "")},
		status: metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"node n1: eni-1: no link with MAC 02:00:00:00:00:01 yet", "node n2: eni-2: pending"},
		absent:   []string{"DaemonSet"},
	}, {
		name:        "an unknown or empty state counts as pending",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old), att("n1", "eni-2", v1alpha1.AttachmentAttached, old)},
		interfaces:  []nodeReport{rep("n1", "eni-1", "", ""), rep("n1", "eni-2", "Rebooting", "soon")},
		status:      metav1.ConditionFalse, reason: ReasonPending,
		contains: []string{"2 of 2", "node n1: eni-2: soon"},
	}, {
		name:        "a failure wins over pending and quotes the agent",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old), att("n2", "eni-2", v1alpha1.AttachmentAttached, old), att("n3", "eni-3", v1alpha1.AttachmentAttached, time.Second)},
		interfaces:  []nodeReport{rep("n1", "eni-1", v1alpha1.InterfaceConfigured, ""), rep("n2", "eni-2", v1alpha1.InterfaceFailed, "name multus is taken by eth3")},
		status:      metav1.ConditionFalse, reason: ReasonInterfaceFailed,
		contains: []string{"1 of 3 attached ENIs failed: node n2: eni-2: name multus is taken by eth3; 1 more not configured yet"},
		absent:   []string{"n1"},
		recheck:  grace - time.Second,
	}, {
		name:        "a failure without a message",
		attachments: []v1alpha1.ENIAttachment{att("n1", "eni-1", v1alpha1.AttachmentAttached, old)},
		interfaces:  []nodeReport{rep("n1", "eni-1", v1alpha1.InterfaceFailed, "")},
		status:      metav1.ConditionFalse, reason: ReasonInterfaceFailed,
		contains: []string{"node n1: eni-1: failed"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, recheck := InterfacesCondition(tc.attachments, reportMap(tc.interfaces), 7, now, grace)
			if c.Type != v1alpha1.ConditionInterfacesConfigured || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 7 {
				t.Fatalf("condition %+v, want %s %s", c, tc.status, tc.reason)
			}
			for _, s := range tc.contains {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q lacks %q", c.Message, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(c.Message, s) {
					t.Errorf("message %q names %q", c.Message, s)
				}
			}
			if recheck != tc.recheck {
				t.Errorf("recheck %v, want %v", recheck, tc.recheck)
			}
			// The same state a moment later, still on the same side of
			// every grace period, gives the same condition: a re-check
			// writes nothing.
			again, _ := InterfacesCondition(tc.attachments, reportMap(tc.interfaces), 7, now.Add(time.Millisecond), grace)
			if again != c {
				t.Errorf("not stable over time:\n%+v\n%+v", c, again)
			}
		})
	}
}

func TestInterfacesConditionListsAtMostTenNodes(t *testing.T) {
	as, rs := failedENIs(15, "boom")
	// The plan's order is not the message's: reversed input, same text.
	rev := make([]v1alpha1.ENIAttachment, len(as))
	for i := range as {
		rev[len(as)-1-i] = as[i]
	}
	c, _ := InterfacesCondition(as, rs, 1, time.Now(), time.Minute)
	r, _ := InterfacesCondition(rev, rs, 1, time.Now(), time.Minute)
	if c.Message != r.Message {
		t.Fatalf("message depends on the attachments' order:\n%s\n%s", c.Message, r.Message)
	}
	if !strings.Contains(c.Message, "node n09: eni-09: boom; and 5 more") || strings.Contains(c.Message, "n10") {
		t.Fatalf("message %q", c.Message)
	}
}

// nodeReport is an agent's report and its node.
type nodeReport struct {
	node string
	s    v1alpha1.InterfaceStatus
}

func reportMap(rs []nodeReport) map[ReportKey]v1alpha1.InterfaceStatus {
	out := map[ReportKey]v1alpha1.InterfaceStatus{}
	for _, r := range rs {
		out[ReportKey{Node: r.node, ENI: r.s.ENIID}] = r.s
	}
	return out
}

// Each line quotes an agent's message, up to 1 KiB: ten of them must not
// make a 10 KiB condition.
func TestInterfacesConditionIsBounded(t *testing.T) {
	as, rs := failedENIs(12, strings.Repeat("x", 1024))
	as = append(as, v1alpha1.ENIAttachment{NodeID: "n99", ENIID: "eni-99", Status: v1alpha1.AttachmentAttached})
	c, _ := InterfacesCondition(as, rs, 1, time.Now(), time.Minute)
	if len(c.Message) > 1024 || !strings.Contains(c.Message, "12 of 13 attached ENIs failed: node n00") ||
		!strings.Contains(c.Message, "and 11 more") || !strings.HasSuffix(c.Message, "1 more not configured yet") {
		t.Fatalf("message of %d bytes: %q", len(c.Message), c.Message)
	}
}

// failedENIs is n attached ENIs (eni-00 on node n00, ...) and their
// agents' reports, each failed with message.
func failedENIs(n int, message string) ([]v1alpha1.ENIAttachment, map[ReportKey]v1alpha1.InterfaceStatus) {
	var as []v1alpha1.ENIAttachment
	rs := map[ReportKey]v1alpha1.InterfaceStatus{}
	for i := range n {
		node, id := fmt.Sprintf("n%02d", i), fmt.Sprintf("eni-%02d", i)
		as = append(as, v1alpha1.ENIAttachment{NodeID: node, ENIID: id, Status: v1alpha1.AttachmentAttached})
		rs[ReportKey{Node: node, ENI: id}] = v1alpha1.InterfaceStatus{ENIID: id, State: v1alpha1.InterfaceFailed, Message: message}
	}
	return as, rs
}
