package nodeeni_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// tagResource tags a subnet or security group as a principal with only
// ec2:CreateTags in the VPC could, and resets the call counts.
func (h *harness) tagResource(id string, tags map[string]string) {
	h.t.Helper()
	if err := h.ec2Client().CreateTags(context.Background(), id, tags); err != nil {
		h.t.Fatal(err)
	}
	h.Emulator.ResetCounts()
}

// selectionOptions re-read the catalog at every resync, so a tag written
// during the test is seen within it.
func (h *harness) selectionOptions() nodeeni.Options {
	o := h.options()
	o.CatalogInterval = resync
	return o
}

// The sample manifest's subnetNames, unchanged, while someone copies the
// Name tag of the node's subnet onto another subnet of its zone: the name
// is refused as ambiguous (Degraded AmbiguousName, naming both subnets),
// no ENI is created there and the running ENI is left as it is.
func TestCopiedNameTagCreatesNoENI(t *testing.T) {
	h, _ := nodesHarness(t, 1, "names")
	h.start(h.selectionOptions())
	spec := h.spec(map[string]string{"ng": "names"})
	spec.SubnetNames, spec.SecurityGroupNames = []string{"multus-a", "multus-b"}, []string{"multus"}
	h.createNodeENI("names", spec)
	h.ready("names", 1)
	running := h.enis()

	h.tagResource(h.Subnets["storage-a"], map[string]string{"Name": "multus-a"})
	h.eventually("the name refused as ambiguous", waitFor, func() (bool, string) {
		d := condition(h.get("names"), v1alpha1.ConditionDegraded)
		ok := d != nil && d.Status == metav1.ConditionTrue && d.Reason == eniplan.ReasonAmbiguousName &&
			strings.Contains(d.Message, h.Subnets["storage-a"]) && strings.Contains(d.Message, h.Subnets["multus-a"])
		return ok, spew(d)
	})
	h.eventually("a few passes", waitFor, func() (bool, string) { return h.calls("DescribeSubnets") >= 3, fmt.Sprint(h.Calls()) })
	if now := h.enis(); len(now) != 1 || now[0].ID != running[0].ID || h.calls("CreateNetworkInterface") != 0 {
		t.Fatalf("ENIs %v (before %v), %d creates", ids(h), running[0].ID, h.calls("CreateNetworkInterface"))
	}
	h.onlyReads(running[0].ID)
}
