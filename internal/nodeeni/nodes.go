package nodeeni

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// nodeInfo is what NodeENI needs of a Node.
type nodeInfo struct {
	Name     string
	Instance string
	Zone     string
}

// providerIDPattern matches the AWS cloud provider's node IDs:
// aws:///<zone>/<instance-id> (the zone may be empty).
var providerIDPattern = regexp.MustCompile(`^aws:///([a-z0-9-]*)/(i-[0-9a-f]+)$`)

// zoneLabels are read in order; the beta label is what older clusters set.
var zoneLabels = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}

// nodeInfoOf reads a node's instance (from spec.providerID) and zone (from
// the zone label, else from the provider ID).
func nodeInfoOf(n *corev1.Node) (nodeInfo, error) {
	m := providerIDPattern.FindStringSubmatch(n.Spec.ProviderID)
	if m == nil {
		return nodeInfo{}, fmt.Errorf("node %s has no AWS provider ID (spec.providerID %q, want aws:///<zone>/<instance-id>)", n.Name, n.Spec.ProviderID)
	}
	info := nodeInfo{Name: n.Name, Instance: m[2], Zone: m[1]}
	for _, l := range zoneLabels {
		if z := n.Labels[l]; z != "" {
			info.Zone = z
			break
		}
	}
	if info.Zone == "" {
		return nodeInfo{}, fmt.Errorf("node %s has no availability zone (label %s)", n.Name, corev1.LabelTopologyZone)
	}
	return info, nil
}
