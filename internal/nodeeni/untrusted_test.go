package nodeeni_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// events returns the notes of a NodeENI's events by reason.
func (h *harness) events(name string) map[string][]string {
	h.t.Helper()
	list := &eventsv1.EventList{}
	if err := h.k8s.List(context.Background(), list); err != nil {
		h.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "NodeENI" && e.Regarding.Name == name {
			out[e.Reason] = append(out[e.Reason], e.Note)
		}
	}
	return out
}

// Issue 13 (defence in depth): ENIs that carry this cluster's ownership
// tags and a live NodeENI's UID and name, but are not what the controller
// creates (a branch ENI, a pod's ENI with the tagger's hash, tags that
// disagree with the attachment or with the NodeENI), are never detached
// or deleted, by the controller or by the collector; a Warning event and
// the untrusted-ENIs metric report them.
func TestUntrustedENIsAreLeftAlone(t *testing.T) {
	h := newHarness(t, emulator.World{Instances: []emulator.InstanceSpec{
		{Name: "i0", Type: "m5.xlarge", Subnet: "nodes-a"}, {Name: "i1", Type: "m5.xlarge", Subnet: "nodes-a"}}})
	h.addNode("n0", h.instance(0), "us-east-1a", map[string]string{"ng": "trust"})
	o := h.options()
	o.CollectorGracePeriod = 100 * time.Millisecond
	m := h.startStepped(o)
	spec := h.multusSpec(map[string]string{"ng": "trust"})
	h.createNodeENI("trust", spec)
	h.ready("trust", 1)
	uid := string(h.get("trust").UID)

	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tags := func(extra map[string]string) map[string]string {
		t := map[string]string{eniplan.TagCluster: h.cluster, eniplan.TagNodeENI: "trust", eniplan.TagNodeENIUID: uid,
			eniplan.TagNode: "n0", eniplan.TagInstance: h.instance(0), eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1",
			eniplan.TagCreatedAt: old, eniplan.TagNoManage: "true"}
		for k, v := range extra {
			if v == "" {
				delete(t, k)
			} else {
				t[k] = v
			}
		}
		return t
	}
	deadUID := map[string]string{eniplan.TagNodeENIUID: "6f0c1d2e-dead-4bee-8000-000000000000", eniplan.TagNodeENI: "gone"}
	merge := func(a, b map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	hash := map[string]string{"eni-tagger.io/hash": "3f2a"}
	res, err := h.Emulator.Load(emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{
		// The live NodeENI's, as the controller would see them:
		{Subnet: "multus-a", InterfaceType: "branch", Tags: tags(nil)},                                                   // 0: branch, available
		{Subnet: "multus-a", Instance: "i0", DeviceIndex: 2, Tags: tags(hash)},                                           // 1: a pod's ENI (tagger hash), attached
		{Subnet: "multus-a", Instance: "i0", DeviceIndex: 3, Tags: tags(map[string]string{eniplan.TagNodeENI: "other"})}, // 2: another NodeENI's name
		{Subnet: "multus-a", Instance: "i1", DeviceIndex: 1, Tags: tags(nil)},                                            // 3: attached to another instance than its tag says
		{Subnet: "multus-a", Tags: tags(map[string]string{eniplan.TagDeviceIndex: "x"})},                                 // 4: device index tag does not parse
		// Orphan candidates of the collector (no live NodeENI), available and old:
		{Subnet: "multus-a", InterfaceType: "branch", Tags: tags(deadUID)},                           // 5: branch
		{Subnet: "multus-a", Tags: tags(merge(deadUID, hash))},                                       // 6: tagger hash
		{Subnet: "multus-a", Tags: tags(merge(deadUID, map[string]string{eniplan.TagInstance: ""}))}, // 7: instance tag missing
	}})
	if err != nil {
		t.Fatal(err)
	}
	seeded := map[string]bool{}
	for _, e := range res.NetworkInterfaces {
		seeded[e.ID] = true
	}
	h.Emulator.ResetCounts()
	h.steps(1)

	h.eventually("untrusted ENIs reported", waitFor, func() (bool, string) {
		byReason := map[string]float64{}
		for _, r := range []string{eniplan.UntrustedInterfaceType, eniplan.UntrustedTaggerTag, eniplan.UntrustedNodeENIName,
			eniplan.UntrustedAttachedElsewhere, eniplan.UntrustedDeviceIndexTag, eniplan.UntrustedMissingTag} {
			byReason[r] = testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_untrusted_enis", map[string]string{"reason": r})
		}
		ok := byReason[eniplan.UntrustedInterfaceType] == 2 && byReason[eniplan.UntrustedTaggerTag] == 2 &&
			byReason[eniplan.UntrustedNodeENIName] == 1 &&
			byReason[eniplan.UntrustedAttachedElsewhere] == 1 && byReason[eniplan.UntrustedDeviceIndexTag] == 1 &&
			byReason[eniplan.UntrustedMissingTag] == 1
		notes := strings.Join(h.events("trust")["UntrustedENI"], "\n")
		for _, e := range res.NetworkInterfaces[:5] {
			ok = ok && strings.Contains(notes, e.ID)
		}
		return ok, fmt.Sprintf("metric %v events %v", byReason, notes)
	})
	// Several refreshes and collector passes: past the collector's grace
	// period and its two sightings.
	h.steps(4)

	if d, del := h.calls("DetachNetworkInterface"), h.calls("DeleteNetworkInterface"); d != 0 || del != 0 {
		t.Errorf("%d detaches and %d deletes; the untrusted ENIs must be left alone", d, del)
	}
	for _, a := range []string{"ModifyNetworkInterfaceAttribute", "CreateTags", "CreateNetworkInterface", "AttachNetworkInterface"} {
		if n := h.calls(a); n != 0 {
			t.Errorf("%d %s calls after the NodeENI was ready", n, a)
		}
	}
	left := map[string]bool{}
	for _, e := range h.enis() {
		left[e.ID] = true
	}
	for id := range seeded {
		if !left[id] {
			t.Errorf("untrusted ENI %s is gone", id)
		}
	}
	got := h.ready("trust", 1)
	for _, a := range h.attachments(got.Name) {
		if seeded[a.ENIID] {
			t.Errorf("untrusted ENI %s in status: %+v", a.ENIID, a)
		}
	}
	if len(h.attachments(got.Name)) != 1 {
		t.Errorf("status attachments %+v, want the NodeENI's one ENI", h.attachments(got.Name))
	}
	for _, note := range h.events("trust")["UntrustedENI"] {
		if len(note) > 1024 {
			t.Errorf("event note of %d bytes", len(note))
		}
	}
	if n := testenv.MetricValue(t, m.Registry, "eni_operator_nodeeni_cleanups_total", nil); n != 0 {
		t.Errorf("cleanups counted: %v", n)
	}

	// Deleting the NodeENI removes its own ENI and releases it; the
	// untrusted ENIs carrying its UID neither block the finalizer nor go.
	h.Emulator.ResetCounts()
	h.deleteNodeENI("trust")
	h.eventually("the NodeENI's own ENI deleted", waitFor, func() (bool, string) {
		return h.calls("DeleteNetworkInterface") >= 1, fmt.Sprintf("%d deletes", h.calls("DeleteNetworkInterface"))
	})
	h.steps(4)
	left = map[string]bool{}
	for _, e := range h.enis() {
		left[e.ID] = true
	}
	for id := range seeded {
		if !left[id] {
			t.Errorf("untrusted ENI %s deleted after its NodeENI was", id)
		}
	}
	if del := h.calls("DeleteNetworkInterface"); del != 1 {
		t.Errorf("%d deletes after the NodeENI's deletion, want 1 (its own ENI)", del)
	}
}
