// Command eni-operator runs the pod ENI tagger, the NodeENI controller and
// the leaked-ENI collector in one leader-elected manager
// (internal/operator).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/kubeconfig"
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
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get,resourceNames=eni-operator-ownership-keys,namespace=eni-operator
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=eni-operator

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
	kubeconfig       string
	zap              zap.Options
	// legacy holds the originals' settings that have another name or no
	// effect here; warnings is what the command logs at start about them.
	legacy   cli.Legacy
	warnings []string
}

// flags binds every flag of the command to c.
func flags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	c.op.BindFlags(fs)
	fs.BoolVar(&c.removeFinalizers, "remove-pod-finalizers", false, "remove the tagger's finalizer (eni-tagger.io/finalizer) from every pod and exit: the uninstall path of --pod-finalizer")
	cli.BindVersion(fs, &c.printVersion)
	cli.BindKubeconfig(fs, &c.kubeconfig)
	cli.BindLogFlags(fs, &c.zap)
	bindLegacy(fs, &c.legacy)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: eni-operator [flags]\n\nManages AWS ENIs for Kubernetes: tags pods' ENIs from the %s annotation and\ncreates, attaches and removes the ENIs NodeENI resources ask for. AWS is found the\nstandard way (IRSA, Pod Identity, instance profile, AWS_* environment, AWS_ENDPOINT_URL_EC2).\nEvery flag is checked before anything starts; a refused value exits with status 2.\n\nFlags:\n", tagger.DefaultAnnotationKey)
		cli.PrintDefaults(fs)
	}
	return fs
}

func parse(args []string, out io.Writer) (*config, error) {
	c := &config{op: operator.DefaultConfig()}
	c.op.Version = version
	fs := flags(c)
	if err := cli.Parse(fs, args, out); err != nil {
		return nil, err
	}
	if err := applyLegacyEnv(fs, &c.legacy, os.LookupEnv); err != nil {
		return nil, err
	}
	if c.printVersion {
		return c, nil
	}
	var p cli.Problems
	p.CheckKubeconfig(c.kubeconfig)
	p.AddErr(c.op.Validate())
	if err := p.Err(); err != nil {
		return nil, err
	}
	c.warnings = append(c.legacy.Warnings(), c.op.Tagger.Warnings()...)
	return c, nil
}

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs the command and returns its exit status: 0, 2 for a
// refused command line (one line on stderr, before anything starts), 1
// when the operator cannot run or stops on an error.
func runMain(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if status, done := cli.Done(cli.Program{Name: "eni-operator", Version: version}, err, err == nil && c.printVersion, stdout, stderr); done {
		return status
	}
	restCfg, err := kubeconfig.Load(c.kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "eni-operator: finding the Kubernetes API:", err)
		return 1
	}
	logger, warn := cli.NewLogger(&c.zap)
	ctrl.SetLogger(logger)
	for _, w := range c.warnings {
		warn("compat", w)
	}
	if err := run(ctrl.SetupSignalHandler(), restCfg, c); err != nil {
		ctrl.Log.Error(err, "eni-operator stopped")
		return 1
	}
	return 0
}

func run(ctx context.Context, restCfg *rest.Config, c *config) error {
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
	operator.SampleHeapOnlyWhenProfiled(c.op.PprofAddr)
	if operator.ApplyGCPercent(c.op.GCPercent) {
		ctrl.Log.WithName("setup").V(1).Info("Go garbage collector's target heap growth set", "percent", c.op.GCPercent)
	}
	if limit := operator.ApplyMemoryLimit(c.op.MemoryLimitPercent); limit > 0 {
		ctrl.Log.WithName("setup").Info("Go soft memory limit set from the container's", "bytes", limit, "percent", c.op.MemoryLimitPercent)
	}
	return operator.Run(ctx, restCfg, c.op)
}
