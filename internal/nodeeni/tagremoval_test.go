package nodeeni_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// A key dropped from spec.tags leaves the ENIs it was written on, in one
// DeleteTags per tag set (the ENIs losing the same tags share a call);
// a value someone else rewrote stays, as does a tag the operator never
// wrote. The record of what was written is in the ENINodes, so a
// restarted process removes what the previous one wrote, and a restart
// in sync writes nothing.
func TestSpecTagRemoval(t *testing.T) {
	ctx := context.Background()
	h, _ := nodesHarness(t, 3, "untag")
	o := h.options()
	m := h.start(o)
	spec := h.multusSpec(map[string]string{"ng": "untag"})
	spec.Tags = map[string]v1alpha1.TagValue{"Team": "net", "Env": "prod", "Cost": "42"}
	h.createNodeENI("ut", spec)
	h.ready("ut", 3)
	h.waitRecords("ut", map[string]string{"Team": "net", "Env": "prod", "Cost": "42"})
	enis := h.enis()
	if len(enis) != 3 {
		t.Fatalf("%d ENIs", len(enis))
	}

	// Stopped, so the rewrite of a tag the spec still gives is not put
	// back before the spec drops it.
	_ = m.Stop()
	c := h.ec2Client()
	if err := c.CreateTags(ctx, enis[0].ID, map[string]string{"Cost": "43"}); err != nil {
		t.Fatal(err)
	}
	for _, e := range enis {
		if err := c.CreateTags(ctx, e.ID, map[string]string{"Backup": "daily"}); err != nil {
			t.Fatal(err)
		}
	}
	h.update("ut", func(s *v1alpha1.NodeENISpec) { s.Tags = map[string]v1alpha1.TagValue{"Team": "net"} })
	h.Emulator.ResetCounts()
	m = h.start(o)
	h.eventually("dropped keys removed, a rewritten one kept", waitFor, func() (bool, string) {
		for i, e := range h.enis() {
			cost := ""
			if i == 0 {
				cost = "43"
			}
			if _, env := e.Tags["Env"]; env || e.Tags["Cost"] != cost || e.Tags["Team"] != "net" || e.Tags["Backup"] != "daily" {
				return false, fmt.Sprintf("%s: %v", e.ID, e.Tags)
			}
		}
		return true, ""
	})
	h.waitRecords("ut", map[string]string{"Team": "net"})
	h.ready("ut", 3)
	// Exactly: the two ENIs losing Cost=42 and Env=prod in one call, the
	// one losing Env=prod alone (its Cost is someone else's) in another.
	var deletes []string
	for _, call := range h.Emulator.Calls() {
		if call.Action == "DeleteTags" {
			deletes = append(deletes, describeTagCall(call.Params))
		}
	}
	slices.Sort(deletes)
	want := []string{
		fmt.Sprintf("%s Cost=42 Env=prod", strings.Join(sortedIDs(enis[1].ID, enis[2].ID), ",")),
		fmt.Sprintf("%s Env=prod", enis[0].ID),
	}
	slices.Sort(want)
	if !slices.Equal(deletes, want) || h.calls("CreateTags") != 0 {
		t.Errorf("DeleteTags calls %q, want %q; %d CreateTags", deletes, want, h.calls("CreateTags"))
	}

	// A restart in sync: no EC2 write, no ENINode write.
	_ = m.Stop()
	versions := h.eniNodeVersions()
	h.Emulator.ResetCounts()
	h.startStepped(o)
	h.steps(6)
	h.ready("ut", 3)
	for action, n := range h.Calls() {
		if !strings.HasPrefix(action, "Describe") {
			t.Errorf("after a restart in sync: %d %s calls", n, action)
		}
	}
	if later := h.eniNodeVersions(); !maps.Equal(versions, later) {
		t.Errorf("ENINodes rewritten after a restart in sync: %v -> %v", versions, later)
	}
}

// waitRecords waits until every entry of the NodeENI records tags.
func (h *harness) waitRecords(name string, tags map[string]string) {
	h.t.Helper()
	h.eventually("the ENINodes record "+fmt.Sprint(tags), waitFor, func() (bool, string) {
		entries := h.attachments(name)
		for _, a := range entries {
			if !maps.Equal(a.AppliedTags, tags) {
				return false, fmt.Sprintf("%s: %v", a.ENIID, a.AppliedTags)
			}
		}
		return len(entries) > 0, "no entries"
	})
}

// describeTagCall is a tag call as "ids k=v k=v", ids and tags sorted.
func describeTagCall(params map[string][]string) string {
	var ids, tags []string
	for i := 1; ; i++ {
		id := params[fmt.Sprintf("ResourceId.%d", i)]
		if len(id) == 0 {
			break
		}
		ids = append(ids, id[0])
	}
	for i := 1; ; i++ {
		k := params[fmt.Sprintf("Tag.%d.Key", i)]
		if len(k) == 0 {
			break
		}
		v := params[fmt.Sprintf("Tag.%d.Value", i)]
		tags = append(tags, k[0]+"="+strings.Join(v, ""))
	}
	slices.Sort(ids)
	slices.Sort(tags)
	return strings.Join(ids, ",") + " " + strings.Join(tags, " ")
}

func sortedIDs(ids ...string) []string { slices.Sort(ids); return ids }
