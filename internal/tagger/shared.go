package tagger

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
)

// sharedENIPods reads what the other pods on a shared ENI ask for.
type sharedENIPods struct {
	client        client.Client
	annotationKey string
	policy        tagplan.Policy
	// requeue brings a peer back to learn of a conflict.
	requeue func(key string)
}

// desired merges the tags of every pod on the same shared ENI.
func (s sharedENIPods) desired(ctx context.Context, pod *corev1.Pod, eni awstypes.ENI, asked map[string]string) (map[string]string, map[string]string, error) {
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.MatchingFields{nodeNameIndex: pod.Spec.NodeName}); err != nil {
		return nil, nil, err
	}
	self := client.ObjectKeyFromObject(pod).String()
	wants := map[string]map[string]string{self: asked}
	var peers []string
	for i := range pods.Items {
		p := &pods.Items[i]
		k := client.ObjectKeyFromObject(p).String()
		raw, ok := p.Annotations[s.annotationKey]
		if k == self || !ok || p.DeletionTimestamp != nil || p.Spec.HostNetwork {
			continue
		}
		ip := podIP(p)
		if ip == "" || !eni.Holds(ip) || nodeAddress(eni, ip) {
			continue
		}
		tags, err := tagplan.ParseAnnotation(raw)
		if err == nil {
			tags, err = s.policy.Desired(p.Namespace, tags)
		}
		if err != nil {
			continue // that pod reports its own problem
		}
		wants[k] = tags
		peers = append(peers, k)
	}
	merged, conflicts := tagplan.MergeShared(wants)
	if len(conflicts) > 0 {
		for _, k := range peers {
			s.requeue(k) // so the other side of a conflict learns of it too
		}
	}
	// Keys other pods asked for that conflict with nobody are written;
	// keys in conflict stay as they are.
	return merged, conflicts, nil
}
