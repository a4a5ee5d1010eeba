package attachdefs

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// LabelNodeENI names, on each definition the operator writes, the
// NodeENI it was written for: the controller lists a NodeENI's
// definitions by it.
const LabelNodeENI = "eni-operator.io/nodeeni"

// GroupVersionKind is Multus' NetworkAttachmentDefinition. Its objects
// are handled as unstructured: the operator needs two fields of them,
// not a module.
func GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"}
}

// newObject is an empty NetworkAttachmentDefinition.
func newObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GroupVersionKind())
	return u
}

// newList is an empty list of them.
func newList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	gvk := GroupVersionKind()
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// ownedBy tells whether u is ne's: its controller reference names ne's
// UID. Only such definitions are ever updated or deleted.
func ownedBy(u *unstructured.Unstructured, ne *v1alpha1.NodeENI) bool {
	ref := metav1.GetControllerOf(u)
	return ref != nil && ref.UID == ne.UID
}

// configOf is u's spec.config ("" when it has none).
func configOf(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "config")
	return s
}

// upToDate tells whether u, one of ne's, is as d wants it.
func upToDate(u *unstructured.Unstructured, d Definition, ne *v1alpha1.NodeENI) bool {
	return configOf(u) == d.Config && u.GetLabels()[LabelNodeENI] == ne.Name
}

// render sets what d wants on u: spec.config, the label and the
// controller reference to ne (Kubernetes' garbage collector deletes the
// definitions with their NodeENI). Everything else on u is left as is.
func render(u *unstructured.Unstructured, d Definition, ne *v1alpha1.NodeENI) {
	u.SetNamespace(d.Namespace)
	u.SetName(d.Name)
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelNodeENI] = ne.Name
	u.SetLabels(labels)
	if metav1.GetControllerOf(u) == nil {
		refs := append(u.GetOwnerReferences(), *metav1.NewControllerRef(ne, v1alpha1.GroupVersion.WithKind("NodeENI")))
		u.SetOwnerReferences(refs)
	}
	_ = unstructured.SetNestedField(u.Object, d.Config, "spec", "config") // a string into a map: cannot fail
}
