package cluster

import (
	"fmt"
	"strings"
)

// removeKubeChains removes the iptables chains that the kubelet
// (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), kube-proxy
// and the CNI plugins (CNI-*) make, and the built-in chains' jumps to
// them, in every table, for IPv4 and IPv6: kube-proxy --cleanup leaves
// the kubelet's. Nothing else on the machine names its chains so.
//
// A rule can go between the listing and its deletion (a dying kubelet
// still syncing), so a failed step is not an error: a few passes, then
// whatever of ours remains is.
func removeKubeChains() error {
	var left []string
	for pass := 0; pass < 3; pass++ {
		left = nil
		for _, bin := range []string{"iptables", "ip6tables"} {
			for _, table := range []string{"filter", "nat", "mangle", "raw"} {
				if chains := removeFrom(bin, table); len(chains) > 0 {
					left = append(left, bin+" -t "+table+": "+strings.Join(chains, " "))
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
	}
	return fmt.Errorf("iptables chains left: %s", strings.Join(left, "; "))
}

// removeFrom removes our chains and the jumps to them from one table, and
// returns the ones it listed (none: nothing was there).
func removeFrom(bin, table string) []string {
	rules, err := output(bin, "-w", "-t", table, "-S")
	if err != nil {
		return nil // no such table, or no IPv6 here
	}
	var chains []string
	for _, line := range strings.Split(rules, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "-N" && ours(f[1]):
			chains = append(chains, f[1])
		case len(f) > 2 && f[0] == "-A" && !ours(f[1]) && jumpsToOurs(f):
			_ = run(bin, append([]string{"-w", "-t", table, "-D"}, f[1:]...)...)
		}
	}
	for _, c := range chains {
		_ = run(bin, "-w", "-t", table, "-F", c)
	}
	for _, c := range chains {
		_ = run(bin, "-w", "-t", table, "-X", c)
	}
	return chains
}

func ours(chain string) bool {
	return strings.HasPrefix(chain, "KUBE-") || strings.HasPrefix(chain, "CNI-")
}

func jumpsToOurs(rule []string) bool {
	for i := 0; i+1 < len(rule); i++ {
		if (rule[i] == "-j" || rule[i] == "-g") && ours(rule[i+1]) {
			return true
		}
	}
	return false
}
