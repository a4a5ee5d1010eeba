// Package kubeconfig finds the Kubernetes API the way controller-runtime
// does — --kubeconfig, then $KUBECONFIG, then the pod's ServiceAccount
// (in-cluster), then ~/.kube/config — but says in one line what is wrong
// and how to provide one, instead of client-go's warnings about
// KUBERNETES_MASTER.
package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

// Help says how to give a command access to the Kubernetes API.
const Help = "run it in a pod with a ServiceAccount (in-cluster), pass --kubeconfig=<file>, or set KUBECONFIG"

// Load returns the configuration of the Kubernetes API: from path (the
// --kubeconfig flag) when set, else from $KUBECONFIG, else the in-cluster
// ServiceAccount, else ~/.kube/config. Its errors are one line.
func Load(path string) (*rest.Config, error) {
	if path != "" {
		return fromFiles("--kubeconfig="+path, path)
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return fromFiles("KUBECONFIG="+env, filepath.SplitList(env)...)
	}
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("in-cluster Kubernetes configuration: %v (or %s)", err, Help)
	}
	if home, herr := os.UserHomeDir(); herr == nil {
		def := filepath.Join(home, ".kube", "config")
		if _, serr := os.Stat(def); serr == nil {
			return fromFiles(def, def)
		}
	}
	return nil, errors.New("no Kubernetes API configuration found: " + Help)
}

func fromFiles(source string, paths ...string) (*rest.Config, error) {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %v; %s", source, oneLine(err), Help)
		}
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths}
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %s; %s", source, oneLine(err), Help)
	}
	if len(raw.Clusters) == 0 {
		return nil, fmt.Errorf("kubeconfig %s names no cluster; %s", source, Help)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %s; %s", source, oneLine(err), Help)
	}
	return cfg, nil
}

// oneLine is err on one line: client-go's errors span several.
func oneLine(err error) string { return strings.Join(bounded.Errors(err), "; ") }
