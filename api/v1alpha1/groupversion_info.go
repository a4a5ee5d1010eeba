// Package v1alpha1 is the networking.k8s.aws/v1alpha1 API: the NodeENI
// resource, which gives every matching node an extra ENI in chosen
// subnets, the ENINode, one per node, which holds that node's ENIs
// and its agent's report, and the ENITagPolicy, which tags the ENIs of
// the pods it selects.
// NodeENI's group, kind and spec field names are those of aws-multi-eni-controller,
// so that project's manifests apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=networking.k8s.aws
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of NodeENI.
	GroupVersion = schema.GroupVersion{Group: "networking.k8s.aws", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a scheme
	// (apimachinery's pattern; api/ depends on nothing else).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds NodeENI, ENINode, ENITagPolicy and their lists to a
	// scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers this package's kinds and their lists under GroupVersion, with
// the meta/v1 types every group version carries (ListOptions, ...).
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodeENI{}, &NodeENIList{}, &ENINode{}, &ENINodeList{},
		&ENITagPolicy{}, &ENITagPolicyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
