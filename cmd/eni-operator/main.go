// Command eni-operator runs the pod ENI tagger, the NodeENI controller and
// the leaked-ENI collector in one leader-elected manager
// (internal/operator).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/operator"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// Leader election: one Lease in the leader-election namespace (the
// operator's; the chart and config/ put this Role there), read and renewed
// by name; create cannot be limited by name (a POST carries none).
// Leader election records its events with the core API.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=create,namespace=eni-operator
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=eni-operator.eni-operator.io,namespace=eni-operator
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=eni-operator

// Authenticated metrics (--metrics-secure): the endpoint asks the API
// server who a scraper is and whether it may get /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// config is everything the command line says.
type config struct {
	op               operator.Config
	removeFinalizers bool
	printVersion     bool
	zap              zap.Options
}

func parse(args []string, out io.Writer) (*config, error) {
	c := &config{op: operator.DefaultConfig()}
	c.op.Version = version
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	fs.SetOutput(out)
	c.op.BindFlags(fs)
	fs.BoolVar(&c.removeFinalizers, "remove-pod-finalizers", false, "remove the tagger's finalizer (eni-tagger.io/finalizer) from every pod and exit: the uninstall path of --pod-finalizer")
	fs.BoolVar(&c.printVersion, "version", false, "print the version and exit")
	// --zap-log-level, --zap-encoder (json by default), --zap-devel,
	// --zap-stacktrace-level, --zap-time-encoding: controller-runtime's
	// logging flags, bound on a scratch set and moved over so they share
	// this command's parsing and --help.
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	c.zap.BindFlags(gofs)
	gofs.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: eni-operator [flags]\n\nManages AWS ENIs for Kubernetes: tags pods' ENIs from the %s annotation and\ncreates, attaches and removes the ENIs NodeENI resources ask for. AWS is found the\nstandard way (IRSA, Pod Identity, instance profile, AWS_* environment, AWS_ENDPOINT_URL_EC2).\n\nFlags:\n", tagger.DefaultAnnotationKey)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.printVersion {
		return c, nil
	}
	if err := c.op.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// versionString is what --version prints: the stamped version, the VCS
// revision when the binary was built from a checkout, and the Go version.
func versionString() string {
	s := "eni-operator " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" {
				s += " (" + kv.Value + ")"
			}
		}
	}
	return s + " " + runtime.Version()
}

func main() {
	c, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eni-operator:", err)
		os.Exit(2)
	}
	if c.printVersion {
		fmt.Println(versionString())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap)))
	if err := run(ctrl.SetupSignalHandler(), c); err != nil {
		ctrl.Log.Error(err, "eni-operator stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, c *config) error {
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the Kubernetes API: %w", err)
	}
	if c.removeFinalizers {
		scheme, err := operator.Scheme()
		if err != nil {
			return err
		}
		k8s, err := client.New(restCfg, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		n, err := tagger.RemoveFinalizers(ctx, k8s)
		fmt.Printf("removed %s from %d pods\n", tagger.Finalizer, n)
		return err
	}
	return operator.Run(ctx, restCfg, c.op)
}
