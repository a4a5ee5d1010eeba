package agent

import (
	"cmp"
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

// FieldManagerPrefix starts the server-side apply field manager of every
// agent; the node name follows.
const FieldManagerPrefix = "eni-agent/"

// FieldManager is the field manager of the agent of node: the only
// writer of its ENINode's status.interfaces, so a forced apply never
// takes a field from anyone and needs no resourceVersion.
func FieldManager(node string) string { return FieldManagerPrefix + node }

func sortInterfaces(s []v1alpha1.InterfaceStatus) {
	slices.SortFunc(s, func(a, b v1alpha1.InterfaceStatus) int { return cmp.Compare(a.ENIID, b.ENIID) })
}

// sameInterfaces compares two sets of entries, order and lastUpdated
// aside.
func sameInterfaces(a, b []v1alpha1.InterfaceStatus) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]v1alpha1.InterfaceStatus(nil), a...)
	y := append([]v1alpha1.InterfaceStatus(nil), b...)
	sortInterfaces(x)
	sortInterfaces(y)
	for i := range x {
		x[i].LastUpdated, y[i].LastUpdated = metav1.Time{}, metav1.Time{}
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// stamp sets lastUpdated: entries that did not change keep theirs, so a
// steady state writes nothing and lastUpdated tells when something last
// changed.
func stamp(old, cur []v1alpha1.InterfaceStatus, now metav1.Time) []v1alpha1.InterfaceStatus {
	prev := map[string]v1alpha1.InterfaceStatus{}
	for _, o := range old {
		prev[o.ENIID] = o
	}
	out := make([]v1alpha1.InterfaceStatus, len(cur))
	for i, c := range cur {
		// The API refuses longer messages (the CRD bounds them); a
		// netlink or sysfs error quoting a long path must not cost the
		// whole report.
		c.Message = bounded.Truncate(c.Message, bounded.Message)
		c.LastUpdated = now
		if o, ok := prev[c.ENIID]; ok && sameInterfaces([]v1alpha1.InterfaceStatus{o}, []v1alpha1.InterfaceStatus{c}) {
			c.LastUpdated = o.LastUpdated
		}
		out[i] = c
	}
	sortInterfaces(out)
	return out
}

// ApplyInterfaces makes entries the whole of node's ENINode's
// status.interfaces, with server-side apply on the status subresource:
// entries applied before and left out now are removed. An ENINode that
// does not exist has nothing to report into: that is not an error.
func ApplyInterfaces(ctx context.Context, c client.Client, node string, entries []v1alpha1.InterfaceStatus) error {
	items := make([]any, 0, len(entries))
	for i := range entries {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&entries[i])
		if err != nil {
			return err
		}
		items = append(items, m)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "ENINode",
		"metadata":   map[string]any{"name": node},
		"status":     map[string]any{"interfaces": items},
	}}
	// Force: an entry edited by hand is this agent's to correct.
	err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager(node)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
