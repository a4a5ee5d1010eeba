// Package v1alpha1 is the networking.k8s.aws/v1alpha1 API: the NodeENI
// resource, which gives every matching node an extra ENI in chosen subnets.
// Its group, kind and spec field names are those of aws-multi-eni-controller,
// so that project's manifests apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=networking.k8s.aws
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of NodeENI.
	GroupVersion = schema.GroupVersion{Group: "networking.k8s.aws", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds NodeENI and NodeENIList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
