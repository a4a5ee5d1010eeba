// Command eni-agent runs on every node (DaemonSet, hostNetwork) and
// configures the interfaces of the ENIs that NodeENIs attached to the
// node: found by MAC address, MTU, up, optional stable name, optional
// DPDK driver binding and SR-IOV device plugin config. It holds no AWS
// credentials and reports into the NodeENIs' status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/agent"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// config is everything the command line says.
type config struct {
	metricsAddr, probeAddr string
	kubeQPS                float64
	kubeBurst              int
	printVersion           bool
	reload                 string
	agent                  agent.Options
	zap                    zap.Options
}

func parse(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("eni-agent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.agent.NodeName, "node-name", os.Getenv("NODE_NAME"), "the node this agent configures (env NODE_NAME, from the downward API's spec.nodeName)")
	fs.StringVar(&c.agent.SysfsRoot, "sysfs-root", agent.DefaultSysfsRoot, "where sysfs is mounted; DPDK driver binding writes below it")
	fs.StringVar(&c.agent.DefaultDPDKDriver, "dpdk-driver", agent.DefaultDPDKDriver, "DPDK driver of NodeENIs that enable DPDK without dpdkDriver")
	fs.StringVar(&c.agent.SRIOVConfig, "sriov-config", "", "the SR-IOV network device plugin's config.json to publish DPDK interfaces in (dpdkResourceName); empty: publishing off")
	fs.StringVar(&c.reload, "sriov-reload", agent.ReloadNone, "how the device plugin learns of a new config: none (only write it), touch:<file> (write the config's SHA-256 there, for the plugin pod's liveness probe), signal:<pidfile> (SIGHUP; needs a shared PID namespace)")
	fs.StringVar(&c.agent.StateFile, "state-file", agent.DefaultStateFile, "node-local file of what the agent must remember across restarts (original drivers and names, its device plugin entries); keep it on a hostPath volume")
	fs.DurationVar(&c.agent.RetryMax, "retry-max", agent.DefaultRetryMax, "longest pause between looks at interfaces that are pending or failed (link events wake the agent at once)")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":9810", "address of the Prometheus /metrics endpoint (0 turns it off)")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":9811", "address of the /healthz and /readyz endpoints")
	fs.Float64Var(&c.kubeQPS, "kube-api-qps", 5, "Kubernetes API requests per second the agent allows itself")
	fs.IntVar(&c.kubeBurst, "kube-api-burst", 10, "burst of Kubernetes API requests")
	fs.BoolVar(&c.printVersion, "version", false, "print the version and exit")
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	c.zap.BindFlags(gofs)
	gofs.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: eni-agent [flags]\n\nConfigures this node's NodeENI interfaces (found by MAC address): MTU, up, stable\nname, DPDK driver binding, SR-IOV device plugin config; reports into the NodeENIs'\nstatus. Runs as a DaemonSet with hostNetwork; holds no AWS credentials.\n\nFlags:\n")
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
	if c.agent.NodeName == "" {
		return nil, errors.New("--node-name (or NODE_NAME) is required: the DaemonSet sets it from spec.nodeName")
	}
	r, err := agent.ParseReload(c.reload)
	if err != nil {
		return nil, err
	}
	c.agent.SRIOVReload = r
	return c, nil
}

func main() {
	c, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "eni-agent:", err)
		os.Exit(2)
	}
	if c.printVersion {
		fmt.Println(version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap)))
	if err := run(ctrl.SetupSignalHandler(), c); err != nil {
		ctrl.Log.Error(err, "eni-agent stopped")
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
	restCfg.UserAgent = "eni-agent/" + version
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress: c.probeAddr,
		// Every node's agent acts on its own node: no leader election.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.NodeENI{}: {Transform: cache.TransformStripManagedFields()},
		}},
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once the NodeENI cache is filled: before that the agent has not
	// looked at its node yet. Liveness is only the ping, so an API outage
	// never restarts the agent (a restart would fix nothing).
	if err := mgr.AddReadyzCheck("cache-sync", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 500*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("NodeENI cache not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}
	c.agent.Registerer = metrics.Registry
	if err := agent.Setup(mgr, c.agent); err != nil {
		return err
	}
	log.Info("starting", "version", version, "node", c.agent.NodeName, "sysfs", c.agent.SysfsRoot,
		"sriovConfig", c.agent.SRIOVConfig, "sriovReload", c.agent.SRIOVReload.String(), "stateFile", c.agent.StateFile)
	return mgr.Start(ctx)
}
