package awsnode

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestOf(t *testing.T) {
	node := func(pid string, labels map[string]string) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: pid}}
		n.Name, n.Labels = "n", labels
		return n
	}
	cases := []struct {
		n       *corev1.Node
		want    Identity
		wantErr bool
	}{
		{node("aws:///us-east-1a/i-0abc", nil), Identity{Name: "n", Instance: "i-0abc", Zone: "us-east-1a"}, false},
		{node("aws:///us-east-1a/i-0abc", map[string]string{corev1.LabelTopologyZone: "us-east-1b"}), Identity{Name: "n", Instance: "i-0abc", Zone: "us-east-1b"}, false},
		{node("aws:////i-0abc", map[string]string{corev1.LabelFailureDomainBetaZone: "us-east-1c"}), Identity{Name: "n", Instance: "i-0abc", Zone: "us-east-1c"}, false},
		{node("aws:////i-0abc", nil), Identity{}, true},
		{node("kind://docker/kind/node", map[string]string{corev1.LabelTopologyZone: "us-east-1a"}), Identity{}, true},
		{node("aws:///us-east-1a/i-0abc/extra", nil), Identity{}, true},
		{node("", nil), Identity{}, true},
	}
	for _, c := range cases {
		got, err := Of(c.n)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%q %v: %+v, %v", c.n.Spec.ProviderID, c.n.Labels, got, err)
		}
	}
}

func TestZone(t *testing.T) {
	for _, c := range []struct {
		pid    string
		labels map[string]string
		want   string
	}{
		{"aws:///us-east-1a/i-0abc", map[string]string{corev1.LabelTopologyZone: "us-east-1b", corev1.LabelFailureDomainBetaZone: "us-east-1c"}, "us-east-1b"},
		{"aws:///us-east-1a/i-0abc", map[string]string{corev1.LabelFailureDomainBetaZone: "us-east-1c"}, "us-east-1c"},
		{"aws:///us-east-1a/i-0abc", nil, "us-east-1a"},
		{"kind://docker/kind/node", nil, ""},
	} {
		n := &corev1.Node{Spec: corev1.NodeSpec{ProviderID: c.pid}}
		n.Labels = c.labels
		if got := Zone(n); got != c.want {
			t.Errorf("%q %v: zone %q, want %q", c.pid, c.labels, got, c.want)
		}
	}
}
