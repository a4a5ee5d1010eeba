package tagger_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/tagger"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// podEvents lists the events.k8s.io events about a pod.
func (h *harness) podEvents(name string) []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.k8s.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// quiet waits until the tagger has stopped reconciling: its reconcile
// count holds still over a couple of seconds.
func (h *harness) quiet() {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		before := h.reconciles()
		time.Sleep(2 * time.Second)
		if h.reconciles() == before {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the tagger never stopped reconciling (%v reconciles)", h.reconciles())
		}
	}
}

// oneWarning checks a pod got exactly one event, a Warning with reason
// and a note within the API's limit, not repeated as a series.
func (h *harness) oneWarning(name, reason string) eventsv1.Event {
	h.t.Helper()
	evs := h.podEvents(name)
	if len(evs) != 1 {
		notes := make([]string, len(evs))
		for i, e := range evs {
			notes[i] = bounded.Truncate(e.Type+"/"+e.Reason+": "+e.Note, 200)
		}
		h.t.Fatalf("pod %s has %d events, want exactly one: %q", name, len(evs), notes)
	}
	e := evs[0]
	if e.Type != "Warning" || e.Reason != reason || len(e.Note) > bounded.EventNote || e.Series != nil {
		h.t.Errorf("pod %s: event %s/%s with a %d-byte note, series %+v", name, e.Type, e.Reason, len(e.Note), e.Series)
	}
	return e
}

// A pod asking for keys the operator, the VPC CNI or the VPC resource
// controller act on is refused: condition False InvalidTags naming the
// prefix, one Warning event, no CreateTags or DeleteTags, and the ENI's
// tags as they were. A forged last-applied record (the pod's own
// annotation) does not make the tagger remove such keys either.
func TestReservedKeysAreRefusedWithoutAnyTagWrite(t *testing.T) {
	// Tags other components own; not the NodeENI controller's, whose ENIs
	// the tagger refuses outright (TestNodeENIInterfacesAreNotTagged).
	base := map[string]string{"Name": "branch", "node.k8s.amazonaws.com/instance_id": "i-0123456789abcdef0",
		"vpcresources.k8s.aws/trunk-eni-id": "eni-trunk", "cluster.k8s.amazonaws.com/name": "prod"}
	h := newHarness(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", InterfaceType: "branch", Count: 6, Tags: base}}})
	h.startManager(h.options())
	cases := []struct{ name, annotation, prefix string }{
		{"nodeeni-forge", "eni-operator.io/cluster=prod,eni-operator.io/nodeeni=x", "eni-operator.io/"},
		{"no-manage", "node.k8s.amazonaws.com/no_manage=true", "node.k8s.amazonaws.com/"},
		{"mixed-case", "Team=Dev,ENI-Operator.IO/NodeENI-UID=u", "eni-operator.io/"},
		{"json-trunk", `{"Team":"Dev","vpcresources.k8s.aws/vlan-id":"7"}`, "vpcresources.k8s.aws/"},
		{"token", "eni-tagger.io/hash=0000000000000000", "eni-tagger.io/"},
	}
	for i, c := range cases {
		h.pod(c.name, h.loaded.NetworkInterfaces[i].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: c.annotation})
	}
	forgedENI := h.loaded.NetworkInterfaces[len(cases)]
	h.pod("forged-record", forgedENI.PrivateIP, map[string]string{tagger.DefaultAnnotationKey: "",
		tagger.LastAppliedTagsAnnotation: `{"node.k8s.amazonaws.com/instance_id":"i-0123456789abcdef0","cluster.k8s.amazonaws.com/name":"prod"}`})

	for _, c := range cases {
		cond := h.waitCondition(c.name, tagger.ReasonInvalidTags, "keys starting with "+c.prefix+" are reserved")
		if cond.Status != "False" {
			t.Errorf("%s: condition %s", c.name, cond.Status)
		}
		h.waitEvent(c.name, "Warning/InvalidTags")
	}
	h.waitCondition("forged-record", tagger.ReasonRemoved, "")
	h.quiet()
	for _, c := range cases {
		if e := h.oneWarning(c.name, tagger.ReasonInvalidTags); !strings.Contains(e.Note, c.prefix) {
			t.Errorf("%s: event note %q does not name %s", c.name, e.Note, c.prefix)
		}
	}
	if c := h.calls(); c["CreateTags"]+c["DeleteTags"] != 0 {
		t.Fatalf("reserved keys cost tag writes: %v", c)
	}
	for i := range len(cases) + 1 {
		e := h.loaded.NetworkInterfaces[i]
		if got := h.eniTags(e.ID); !maps.Equal(got, base) {
			t.Errorf("ENI %s tags %v, want them unchanged: %v", e.ID, got, base)
		}
	}
}

// syncBuffer is a log sink several goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An annotation near Kubernetes' 256 KiB limit once made a 2.1 MB
// condition message etcd refused, a retry loop, 2 MB log lines and no
// event. Now: refused before it is read, one InvalidTags condition and
// one event within 1 KiB, no retries, no AWS call, and a log with no long
// line and nothing of the annotation in it. An annotation under the limit
// with hundreds of bad keys lists a few and counts the rest.
func TestOversizeAnnotationsAreRefusedOnceWithBoundedOutput(t *testing.T) {
	logs := &syncBuffer{}
	logger := zap.New(zap.WriteTo(logs))
	h := newHarness(t, branchWorld(3))
	h.logger = &logger
	h.startManager(h.options())

	longKey := strings.Repeat("k", 200)
	var huge strings.Builder // thousands of long keys, 220 KB
	huge.WriteString("{")
	for i := 0; huge.Len() < 220<<10; i++ {
		if i > 0 {
			huge.WriteString(",")
		}
		fmt.Fprintf(&huge, "%q:%q", fmt.Sprintf("%s-%05d", longKey, i), "value")
	}
	huge.WriteString("}")
	oneKey := `{"` + strings.Repeat("K", 200<<10) + `":"v"}` // a single 200 KB key
	var many strings.Builder                                 // under the limit: 200 keys too long
	for i := range 200 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, "%s-%03d=v", strings.Repeat("m", 140), i)
	}
	if many.Len() >= tagplan.MaxAnnotationBytes {
		t.Fatalf("the under-limit annotation is %d bytes", many.Len())
	}
	cases := []struct{ name, annotation, message string }{
		{"many-long-keys", huge.String(), fmt.Sprintf("it is %d bytes, over the limit of %d", huge.Len(), tagplan.MaxAnnotationBytes)},
		{"one-huge-key", oneKey, fmt.Sprintf("it is %d bytes, over the limit of %d", len(oneKey), tagplan.MaxAnnotationBytes)},
		{"under-limit", many.String(), "200 tags asked for"},
	}
	for i, c := range cases {
		h.pod(c.name, h.loaded.NetworkInterfaces[i].PrivateIP, map[string]string{tagger.DefaultAnnotationKey: c.annotation})
	}
	for _, c := range cases {
		h.waitCondition(c.name, tagger.ReasonInvalidTags, c.message)
		h.waitEvent(c.name, "Warning/InvalidTags")
	}
	h.quiet()
	reconciles := h.reconciles()
	transitions := map[string]string{}
	for _, c := range cases {
		transitions[c.name] = condition(h.get(c.name)).LastTransitionTime.String()
	}
	time.Sleep(3 * time.Second) // a retry loop would show within this
	if n := h.reconciles(); n != reconciles {
		t.Errorf("the tagger kept reconciling: %v reconciles, then %v", reconciles, n)
	}
	if reconciles > float64(3*len(cases)) {
		t.Errorf("%v reconciles for %d pods", reconciles, len(cases))
	}
	for _, c := range cases {
		cond := condition(h.get(c.name))
		if len(cond.Message) > bounded.Message {
			t.Errorf("%s: condition message of %d bytes", c.name, len(cond.Message))
		}
		if got := cond.LastTransitionTime.String(); got != transitions[c.name] {
			t.Errorf("%s: condition rewritten (%s, then %s)", c.name, transitions[c.name], got)
		}
		h.oneWarning(c.name, tagger.ReasonInvalidTags)
	}
	under := condition(h.get("under-limit")).Message
	if !strings.Contains(under, "more") || strings.Count(under, `"mmm`) > bounded.Items {
		t.Errorf("under-limit: message lists too much or does not count the rest: %s", under)
	}
	if n := h.total(); n != 0 {
		t.Errorf("oversize annotations cost %d EC2 calls: %v", n, h.calls())
	}
	out := logs.String()
	if !strings.Contains(out, "InvalidTags") {
		t.Fatalf("the manager's log was not captured: %.500s", out)
	}
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 4096 {
			t.Errorf("log line %d is %d bytes: %.300s…", i, len(line), line)
		}
	}
	for _, piece := range []string{strings.Repeat("k", 200), strings.Repeat("K", 200), strings.Repeat("m", 140) + "-010"} {
		if strings.Contains(out, piece) {
			t.Errorf("the log repeats the annotation (%.20s…)", piece)
		}
	}
}
