// Package awsnode reads what the operator knows of a Kubernetes node on
// EC2: its instance (spec.providerID) and availability zone. Every part
// that acts on a node reads it here, so that none of them sees a node
// the others cannot.
package awsnode

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// Identity is a node's name, instance and zone.
type Identity struct {
	Name     string
	Instance string
	Zone     string
}

// providerIDPattern matches the AWS cloud provider's node IDs:
// aws:///<zone>/<instance-id> (the zone may be empty).
var providerIDPattern = regexp.MustCompile(`^aws:///([a-z0-9-]*)/(i-[0-9a-f]+)$`)

// zoneLabels are read in order; the beta label is what older clusters set.
var zoneLabels = []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone}

// Instance returns the EC2 instance of a node's spec.providerID.
func Instance(n *corev1.Node) (string, bool) {
	m := providerIDPattern.FindStringSubmatch(n.Spec.ProviderID)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// Zone returns a node's availability zone: its zone label, else the
// zone of its provider ID ("" when neither says).
func Zone(n *corev1.Node) string {
	for _, l := range zoneLabels {
		if z := n.Labels[l]; z != "" {
			return z
		}
	}
	if m := providerIDPattern.FindStringSubmatch(n.Spec.ProviderID); m != nil {
		return m[1]
	}
	return ""
}

// Of reads a node's identity; an error says what the node lacks.
func Of(n *corev1.Node) (Identity, error) {
	instance, ok := Instance(n)
	if !ok {
		return Identity{}, fmt.Errorf("node %s has no AWS provider ID (spec.providerID %q, want aws:///<zone>/<instance-id>)", n.Name, n.Spec.ProviderID)
	}
	id := Identity{Name: n.Name, Instance: instance, Zone: Zone(n)}
	if id.Zone == "" {
		return Identity{}, fmt.Errorf("node %s has no availability zone (label %s)", n.Name, corev1.LabelTopologyZone)
	}
	return id, nil
}
