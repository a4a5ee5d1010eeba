package cli

import (
	"flag"
	"os"
)

// BindKubeconfig binds --kubeconfig, the cluster's kubeconfig file, to
// path (internal/kubeconfig.Load finds one when it is empty).
func BindKubeconfig(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "kubeconfig", "", "kubeconfig file of the cluster (default: $KUBECONFIG, else the pod's ServiceAccount, else ~/.kube/config)")
}

// CheckKubeconfig records a --kubeconfig that is not a file that exists.
func (p *Problems) CheckKubeconfig(path string) {
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	p.Check(err == nil && st.Mode().IsRegular(), "kubeconfig", path,
		"a kubeconfig file that exists (or leave it out: $KUBECONFIG, the pod's ServiceAccount, ~/.kube/config)")
}
