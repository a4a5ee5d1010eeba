package cluster

import (
	"errors"
	"strings"
)

// removeKubeChains removes the iptables chains that the kubelet
// (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT), kube-proxy
// and the CNI plugins (CNI-*) make, and the built-in chains' jumps to
// them, in every table, for IPv4 and IPv6: kube-proxy --cleanup leaves
// the kubelet's. Nothing else on the machine names its chains so.
func removeKubeChains() error {
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			rules, err := output(bin, "-w", "-t", table, "-S")
			if err != nil {
				continue // no such table, or no IPv6 here
			}
			var chains []string
			for _, line := range strings.Split(rules, "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) == 2 && f[0] == "-N" && ours(f[1]):
					chains = append(chains, f[1])
				case len(f) > 2 && f[0] == "-A" && !ours(f[1]) && jumpsToOurs(f):
					errs = append(errs, run(bin, append([]string{"-w", "-t", table, "-D"}, f[1:]...)...))
				}
			}
			for _, c := range chains {
				errs = append(errs, run(bin, "-w", "-t", table, "-F", c))
			}
			for _, c := range chains {
				errs = append(errs, run(bin, "-w", "-t", table, "-X", c))
			}
		}
	}
	return errors.Join(errs...)
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
