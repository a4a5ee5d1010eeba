package nodeeni_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

func ids(h *harness) []string {
	var out []string
	for _, e := range h.enis() {
		out = append(out, e.ID)
	}
	sort.Strings(out)
	return out
}

// Item 7: security groups, description and tags change in place (same
// ENIs, no create); a deviceIndex change replaces the ENIs on purpose: EC2
// cannot move an attachment, and the node's network configuration expects
// the interface at the new index.
func TestSpecChanges(t *testing.T) {
	h, _ := nodesHarness(t, 2, "spec")
	h.start(h.options())
	spec := h.multusSpec(map[string]string{"ng": "spec"})
	spec.Description = "v1"
	h.createNodeENI("sc", spec)
	h.ready("sc", 2)
	before := ids(h)
	creates := h.calls("CreateNetworkInterface")

	h.update("sc", func(s *v1alpha1.NodeENISpec) {
		s.SecurityGroupNames = nil
		s.SecurityGroupIDs = []string{h.Groups["storage"], h.Groups["multus"]}
		s.Description = "v2"
		s.Tags = map[string]v1alpha1.TagValue{"Env": "prod"}
	})
	h.eventually("changes applied in place", waitFor, func() (bool, string) {
		for _, e := range h.enis() {
			groups := append([]string(nil), e.SecurityGroups...)
			sort.Strings(groups)
			want := []string{h.Groups["storage"], h.Groups["multus"]}
			sort.Strings(want)
			if !slices.Equal(groups, want) || e.Description != "v2" || e.Tags["Env"] != "prod" {
				return false, fmt.Sprintf("%s: groups %v description %q tags %v", e.ID, e.SecurityGroups, e.Description, e.Tags)
			}
		}
		return true, ""
	})
	h.ready("sc", 2)
	if after := ids(h); !slices.Equal(after, before) || h.calls("CreateNetworkInterface") != creates {
		t.Fatalf("ENIs replaced (%v -> %v, %d creates) instead of changed in place", before, after, h.calls("CreateNetworkInterface")-creates)
	}

	h.update("sc", func(s *v1alpha1.NodeENISpec) { s.DeviceIndex = 3 })
	h.waitReplaced(2, 3, before)
	ne := h.ready("sc", 2)
	for _, a := range h.attachments(ne.Name) {
		if a.DeviceIndex != 3 {
			t.Fatalf("status %+v", a)
		}
	}
}
