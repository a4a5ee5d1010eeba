package podaddrs

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
)

// NetworkStatusAnnotation is where Multus reports a pod's interfaces.
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// Bounds on what a pod's annotation can make the operator read: its
// author can write it, so a pod is refused rather than read at any size.
const (
	maxStatusBytes     = 32 << 10
	maxStatusEntries   = 16
	maxAddressesPerPod = 8
)

// attachedNetwork is one entry of a network-status annotation that
// matters here: a secondary network's interface, its MAC and addresses.
type attachedNetwork struct {
	Name      string
	Interface string
	MAC       string // canonical form (net.HardwareAddr.String)
	Addresses []netip.Addr
}

// statusEntry is the part of Multus' network-status entry read here.
type statusEntry struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	MAC       string   `json:"mac"`
	Default   bool     `json:"default"`
}

// parseNetworkStatus reads the secondary networks of a network-status
// annotation: the default network and entries without a MAC or an
// address are left out. An annotation that is too large, not the JSON
// Multus writes, or names too many networks or addresses is an error
// that says which.
func parseNetworkStatus(v string) ([]attachedNetwork, error) {
	if len(v) > maxStatusBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read", NetworkStatusAnnotation, len(v), maxStatusBytes)
	}
	var entries []statusEntry
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return nil, fmt.Errorf("%s is not Multus' network status (a JSON list of networks): %v", NetworkStatusAnnotation, err)
	}
	if len(entries) > maxStatusEntries {
		return nil, fmt.Errorf("%s names %d networks, more than the %d read", NetworkStatusAnnotation, len(entries), maxStatusEntries)
	}
	var out []attachedNetwork
	total := 0
	for _, e := range entries {
		if e.Default || e.MAC == "" || len(e.IPs) == 0 {
			continue
		}
		hw, err := net.ParseMAC(e.MAC)
		if err != nil || len(hw) != 6 {
			return nil, fmt.Errorf("%s: network %q has MAC %q, not an Ethernet address", NetworkStatusAnnotation, e.Name, e.MAC)
		}
		n := attachedNetwork{Name: e.Name, Interface: e.Interface, MAC: hw.String()}
		for _, s := range e.IPs {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%s: network %q has address %q, not an IP address", NetworkStatusAnnotation, e.Name, s)
			}
			n.Addresses = append(n.Addresses, a.Unmap())
		}
		if total += len(n.Addresses); total > maxAddressesPerPod {
			return nil, fmt.Errorf("%s names more than %d addresses on secondary networks", NetworkStatusAnnotation, maxAddressesPerPod)
		}
		out = append(out, n)
	}
	return out, nil
}
