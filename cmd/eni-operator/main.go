// Command eni-operator runs the pod ENI tagger, the NodeENI controller and
// the leaked-ENI collector in one leader-elected manager.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// Leader election:
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// config is everything the command line says.
type config struct {
	metricsAddr, probeAddr, pprofAddr string
	leaderElect                       bool
	leaderElectionNamespace           string
	clusterName                       string
	kubeQPS                           float64
	kubeBurst                         int
	enableTagger                      bool
	removeFinalizers                  bool
	printVersion                      bool
	ec2                               ec2.Config
	tagger                            tagger.Options
	nodeeni                           nodeeni.Options
	zap                               zap.Options
}

func parse(args []string, out io.Writer) (*config, error) {
	c := &config{tagger: tagger.DefaultOptions()}
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":8090", "address of the Prometheus /metrics endpoint (0 turns it off)")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&c.pprofAddr, "pprof-bind-address", "0", "address of the pprof endpoints (0 turns them off)")
	fs.BoolVar(&c.leaderElect, "leader-elect", false, "elect a leader, so only one replica acts (set it when running more than one)")
	fs.StringVar(&c.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
	fs.StringVar(&c.clusterName, "cluster-name", os.Getenv("CLUSTER_NAME"), "cluster name written on and scoping the ENIs the NodeENI controller creates (env CLUSTER_NAME); the NodeENI controller and collector stay off without it")
	fs.Float64Var(&c.kubeQPS, "kube-api-qps", 50, "Kubernetes API requests per second the operator allows itself")
	fs.IntVar(&c.kubeBurst, "kube-api-burst", 100, "burst of Kubernetes API requests")
	fs.BoolVar(&c.enableTagger, "enable-tagger", true, "run the pod ENI tagger")
	fs.BoolVar(&c.removeFinalizers, "remove-pod-finalizers", false, "remove the tagger's finalizer (eni-tagger.io/finalizer) from every pod and exit: the uninstall path of --pod-finalizer")
	fs.BoolVar(&c.printVersion, "version", false, "print the version and exit")
	c.ec2.BindFlags(fs)
	c.tagger.BindFlags(fs)
	c.nodeeni.BindFlags(fs)
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
	if c.enableTagger {
		if err := c.tagger.Validate(); err != nil {
			return nil, err
		}
	}
	return c, nil
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
		fmt.Println(version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap)))
	if err := run(ctrl.SetupSignalHandler(), c); err != nil {
		ctrl.Log.Error(err, "eni-operator stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, c *config) error {
	log := ctrl.Log.WithName("setup")
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the Kubernetes API: %w", err)
	}
	restCfg.QPS, restCfg.Burst = float32(c.kubeQPS), c.kubeBurst
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if c.removeFinalizers {
		k8s, err := client.New(restCfg, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		n, err := tagger.RemoveFinalizers(ctx, k8s)
		fmt.Printf("removed %s from %d pods\n", tagger.Finalizer, n)
		return err
	}

	podCache := cache.ByObject{Transform: cache.TransformStripManagedFields()}
	if c.tagger.WatchNamespace != "" {
		podCache.Namespaces = map[string]cache.Config{c.tagger.WatchNamespace: {}}
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress:  c.probeAddr,
		PprofBindAddress:        c.pprofAddr,
		LeaderElection:          c.leaderElect,
		LeaderElectionID:        "eni-operator.eni-operator.io",
		LeaderElectionNamespace: c.leaderElectionNamespace,
		Cache:                   cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: podCache}},
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}

	c.ec2.Registerer = metrics.Registry
	awsCtx, cancel := context.WithTimeout(ctx, time.Minute)
	ec2c, err := ec2.New(awsCtx, c.ec2)
	cancel()
	if err != nil {
		return fmt.Errorf("configuring the EC2 client: %w", err)
	}
	if c.enableTagger {
		c.tagger.Registerer = metrics.Registry
		if _, err := tagger.Setup(mgr, ec2c, c.tagger); err != nil {
			return fmt.Errorf("pod tagger: %w", err)
		}
		log.Info("pod tagger enabled", "annotation", c.tagger.AnnotationKey, "dryRun", c.tagger.DryRun)
	}
	switch {
	case c.nodeeni.DisableController && c.nodeeni.DisableCollector:
	case c.clusterName == "":
		log.Error(nil, "NodeENI controller and ENI collector are OFF: set --cluster-name (or CLUSTER_NAME) to run them")
	default:
		c.nodeeni.ClusterName = c.clusterName
		c.nodeeni.Registerer = metrics.Registry
		if err := nodeeni.Setup(mgr, ec2c, c.nodeeni); err != nil {
			return fmt.Errorf("NodeENI controller: %w", err)
		}
		log.Info("NodeENI controller enabled", "cluster", c.clusterName)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			// Reported, not fatal: a crash loop would hide the message.
			if err := ec2c.CheckPermissions(ctx, nodeeni.RequiredIAMActions()); err != nil {
				log.Error(err, "EC2 permission check for the NodeENI controller failed")
			} else {
				log.Info("EC2 permissions for the NodeENI controller verified")
			}
			return nil
		})); err != nil {
			return err
		}
	}
	log.Info("starting", "version", version, "vpc", ec2c.VPCID())
	return mgr.Start(ctx)
}
