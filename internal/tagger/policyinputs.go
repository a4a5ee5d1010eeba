package tagger

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/awsnode"
	"github.com/eni-operator/eni-operator/internal/tagpolicy"
)

// operatorTags is how many tags of an ENI the tagger keeps for itself:
// the ownership token (HashTag).
const operatorTags = 1

// maxOwners bounds the memo of resolved owners; it starts again empty
// when full.
const maxOwners = 10000

// policyReads reads what the policies' expressions read beside the pod:
// its top-level owner and its node.
type policyReads struct {
	owners *owners
	// nodes reads the pod's node (the cache, as metadata).
	nodes client.Reader
}

// inputs gathers what the policies' expressions read of the pod
// (policies select it). The owner and the node cost a read each, so only
// when one of them has an expression.
func (pr policyReads) inputs(ctx context.Context, pod *corev1.Pod, nsLabels map[string]string, policies []*tagpolicy.Policy) (tagpolicy.Inputs, error) {
	in := tagpolicy.Inputs{
		Pod: tagpolicy.Pod{Name: pod.Name, Namespace: pod.Namespace, Labels: orEmpty(pod.Labels),
			ServiceAccountName: pod.Spec.ServiceAccountName, NodeName: pod.Spec.NodeName},
		Namespace: tagpolicy.Namespace{Name: pod.Namespace, Labels: orEmpty(nsLabels)},
		Owner:     tagpolicy.Owner{Kind: "Pod", Name: pod.Name},
		Node:      tagpolicy.Node{Name: pod.Spec.NodeName, Labels: map[string]string{}},
	}
	expressions := false
	for _, p := range policies {
		expressions = expressions || p.Expressions()
	}
	if !expressions {
		return in, nil
	}
	var err error
	if in.Owner, err = pr.owners.of(ctx, pod); err != nil {
		return in, fmt.Errorf("finding the owner of pod %s/%s for its tag policies: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Spec.NodeName != "" {
		node := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
		if err := pr.nodes.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); client.IgnoreNotFound(err) != nil {
			return in, fmt.Errorf("reading node %s for the tag policies of pod %s/%s: %w", pod.Spec.NodeName, pod.Namespace, pod.Name, err)
		}
		in.Node.Labels = orEmpty(node.Labels)
		in.Node.Zone = awsnode.Zone(&corev1.Node{ObjectMeta: node.ObjectMeta})
		in.Node.InstanceType = node.Labels[corev1.LabelInstanceTypeStable]
	}
	return in, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// owners resolves a pod's top-level owner through its ReplicaSet or Job,
// as the expressions' variable owner. A controller reference never
// changes, so what was resolved is kept (by the intermediate owner's
// UID).
type owners struct {
	api  client.Reader
	mu   sync.Mutex
	memo map[types.UID]tagpolicy.Owner
}

func newOwners(api client.Reader) *owners {
	return &owners{api: api, memo: map[types.UID]tagpolicy.Owner{}}
}

func (o *owners) of(ctx context.Context, pod *corev1.Pod) (tagpolicy.Owner, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return tagpolicy.Owner{Kind: "Pod", Name: pod.Name}, nil
	}
	direct := tagpolicy.Owner{Kind: ref.Kind, Name: ref.Name}
	var gv string
	switch {
	case ref.Kind == "ReplicaSet" && ref.APIVersion == "apps/v1":
		gv = "apps/v1"
	case ref.Kind == "Job" && ref.APIVersion == "batch/v1":
		gv = "batch/v1"
	default:
		return direct, nil // Deployment-less owners: StatefulSet, DaemonSet, or anything else
	}
	o.mu.Lock()
	owner, known := o.memo[ref.UID]
	o.mu.Unlock()
	if known {
		return owner, nil
	}
	parent := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gv, Kind: ref.Kind}}
	err := o.api.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, parent)
	switch {
	case apierrors.IsNotFound(err):
		return direct, nil // orphaned meanwhile: its own owner it is
	case err != nil:
		return direct, err
	}
	owner = direct
	if up := metav1.GetControllerOfNoCopy(parent); up != nil && parent.UID == ref.UID {
		owner = tagpolicy.Owner{Kind: up.Kind, Name: up.Name}
	}
	o.mu.Lock()
	if len(o.memo) >= maxOwners {
		clear(o.memo)
	}
	o.memo[ref.UID] = owner
	o.mu.Unlock()
	return owner, nil
}
