package tagger

import (
	"testing"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

func TestNodeAddress(t *testing.T) {
	primary := awstypes.ENI{ID: "eni-p", InterfaceType: "interface", PrimaryIP: "10.0.0.10", SecondaryIPs: []string{"10.0.0.11"},
		Attachment: &awstypes.Attachment{InstanceID: "i-1", DeviceIndex: 0}}
	second := primary
	second.Attachment = &awstypes.Attachment{InstanceID: "i-1", DeviceIndex: 1}
	managed := primary // attached to something that is not an instance (a load balancer's ENI)
	managed.Attachment = &awstypes.Attachment{}
	detached := primary
	detached.Attachment = nil
	for _, c := range []struct {
		name string
		eni  awstypes.ENI
		ip   string
		want bool
	}{
		{"the node's address", primary, "10.0.0.10", true},
		{"the node's address, IPv4-mapped", primary, "::ffff:10.0.0.10", true},
		{"a secondary address of the primary ENI", primary, "10.0.0.11", false},
		{"the primary address of a second ENI", second, "10.0.0.10", false},
		{"an ENI attached to no instance", managed, "10.0.0.10", false},
		{"a detached ENI", detached, "10.0.0.10", false},
		{"not an address", primary, "node", false},
	} {
		if got := nodeAddress(c.eni, c.ip); got != c.want {
			t.Errorf("%s: nodeAddress = %v, want %v", c.name, got, c.want)
		}
	}
}
