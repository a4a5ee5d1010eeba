// Package tagger applies the AWS tags a pod asks for in its annotation to
// the pod's ENI: it parses and vets the annotation, plans the minimal tag
// diff, writes it through the batched EC2 client, records what it applied
// (on the pod and in the operator's ledger ConfigMaps, so the record
// outlives the pod) and removes its tags again when the pod goes away.
package tagger

import "github.com/eni-operator/eni-operator/internal/tagger/tagplan"

// Names shared with k8s-eni-tagger, so its users' pods, ENIs and
// dashboards keep working unchanged.
const (
	// DefaultAnnotationKey is the pod annotation holding the desired tags.
	DefaultAnnotationKey = "eni-tagger.io/tags"
	// LastAppliedTagsAnnotation records, as JSON, the tags the operator
	// wrote for the pod.
	LastAppliedTagsAnnotation = "eni-tagger.io/last-applied-tags"
	// LastAppliedHashAnnotation records the ownership token the operator
	// last wrote to the ENI for the pod.
	LastAppliedHashAnnotation = "eni-tagger.io/last-applied-hash"
	// HashTag is the ENI tag carrying the ownership token.
	HashTag = tagplan.HashTag
	// Finalizer is set on pods only with --pod-finalizer.
	Finalizer = "eni-tagger.io/finalizer"
	// ConditionType is the pod condition reporting the tagging outcome.
	ConditionType = "eni-tagger.io/tagged"
)

// Reasons of the pod condition (and of the events that go with them).
const (
	ReasonSynced          = "Synced"
	ReasonInvalidTags     = "InvalidTags"
	ReasonConflict        = "Conflict"
	ReasonSharedENI       = "SharedENI"
	ReasonSubnetNotWanted = "SubnetNotAllowed"
	// ReasonNodeENIInterface: the pod's IP is on an ENI of the NodeENI
	// controller, which its NodeENI's spec.tags tag.
	ReasonNodeENIInterface = "NodeENIInterface"
	// ReasonHostNetwork: the pod is on the host network, so its address
	// is its node's and its ENI the node's own, never a pod's to tag.
	ReasonHostNetwork = "HostNetwork"
	// ReasonNodeAddress: the pod's IP is the primary address of an
	// instance's primary ENI (device index 0), the node's own interface.
	ReasonNodeAddress = "NodeAddress"
	ReasonENINotFound = "ENINotFound"
	ReasonAWSError    = "AWSError"
	ReasonDryRun      = "DryRun"
	ReasonRemoved     = "TagsRemoved"
	// ReasonPolicyRefused: the tag policies that select the pod cannot
	// give it tags (an expression failed for it, a policy does not
	// compile, or policies and annotation pass the 50-tag limit); its
	// ENI's tags are left as they are.
	ReasonPolicyRefused = "PolicyRefused"
)
