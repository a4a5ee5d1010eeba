// Command eni-agent runs on every node (DaemonSet, hostNetwork) and
// configures the interfaces of the ENIs that NodeENIs attached to the
// node: found by MAC address, MTU, up, optional stable name, optional
// DPDK driver binding and SR-IOV device plugin config. It holds no AWS
// credentials and reports into its node's ENINode status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/agent"
	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/kubeconfig"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// config is everything the command line says.
type config struct {
	metricsAddr, probeAddr string
	kubeQPS                float64
	kubeBurst              int
	printVersion           bool
	probe                  string
	kubeconfig             string
	reload                 string
	agent                  agent.Options
	zap                    zap.Options
	legacy                 legacyOutcome // what became of the ENI Manager's environment variables
}

// flags binds every flag of the command to c.
func flags(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("eni-agent", flag.ContinueOnError)
	fs.StringVar(&c.agent.NodeName, "node-name", os.Getenv("NODE_NAME"), "the node this agent configures (env NODE_NAME, from the downward API's spec.nodeName)")
	fs.Func("node-ip", "an address of this node; the agent never configures the link holding one (comma-separated or repeated; env HOST_IPS, from the downward API's status.hostIPs)", func(s string) error {
		c.agent.NodeIPs = append(c.agent.NodeIPs, strings.Split(s, ",")...)
		return nil
	})
	if ips := os.Getenv("HOST_IPS"); ips != "" {
		c.agent.NodeIPs = strings.Split(ips, ",")
	}
	fs.StringVar(&c.agent.SysfsRoot, "sysfs-root", agent.DefaultSysfsRoot, "where sysfs is mounted (an absolute path); DPDK driver binding writes below it")
	fs.StringVar(&c.agent.DefaultDPDKDriver, "dpdk-driver", agent.DefaultDPDKDriver, "DPDK driver of NodeENIs that enable DPDK without dpdkDriver (env DEFAULT_DPDK_DRIVER, the ENI Manager's name)")
	fs.StringVar(&c.agent.SRIOVConfig, "sriov-config", "", "the SR-IOV network device plugin's config.json (an absolute path) to publish NodeENI interfaces in (dpdkResourceName: DPDK-bound devices, and with DPDK off the kernel-driver device named by dpdkPCIAddress); empty: publishing off (env SRIOV_DP_CONFIG_PATH, the ENI Manager's name)")
	fs.StringVar(&c.reload, "sriov-reload", agent.ReloadNone, "how the device plugin learns of a new config: none (only write it), touch:<file> (write the config's SHA-256 there, for the plugin pod's liveness probe), signal:<pidfile> (SIGHUP; needs a shared PID namespace)")
	fs.StringVar(&c.agent.StateFile, "state-file", agent.DefaultStateFile, "node-local file (an absolute path) of what the agent must remember across restarts (original drivers and names, its device plugin entries); keep it on a hostPath volume")
	fs.DurationVar(&c.agent.RetryMax, "retry-max", agent.DefaultRetryMax, "longest pause between looks at interfaces that are pending or failed (>= 1s; link events wake the agent at once)")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":9810", "address of the Prometheus /metrics endpoint: host:port, :port or a bare port (0 turns it off)")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":9811", "address of the /healthz and /readyz endpoints: host:port, :port or a bare port (0 turns them off)")
	fs.Float64Var(&c.kubeQPS, "kube-api-qps", 5, "Kubernetes API requests per second the agent allows itself (> 0)")
	fs.IntVar(&c.kubeBurst, "kube-api-burst", 10, "burst of Kubernetes API requests (>= 1)")
	cli.BindKubeconfig(fs, &c.kubeconfig)
	cli.BindVersion(fs, &c.printVersion)
	fs.StringVar(&c.probe, "probe", "", "check a health endpoint and exit: 0 when http://host:port/path answers 200 within 2s, 1 otherwise (for exec probes, so /healthz and /readyz can listen on the node's loopback); nothing else runs")
	cli.BindLogFlags(fs, &c.zap)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: eni-agent [flags]\n\nConfigures this node's NodeENI interfaces (found by MAC address): MTU, up, stable\nname, DPDK driver binding, SR-IOV device plugin config; reports into its node's\nENINode status. Runs as a DaemonSet with hostNetwork; holds no AWS credentials.\nEvery flag is checked before anything starts; a refused value exits with status 2.\n\nFlags:\n")
		cli.PrintDefaults(fs)
	}
	return fs
}

func parse(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flags(c)
	if err := cli.Parse(fs, args, out); err != nil {
		return nil, err
	}
	if c.printVersion {
		return c, nil
	}
	if c.probe != "" {
		u, err := url.Parse(c.probe)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("invalid --probe=%s: an http://host:port/path URL", c.probe)
		}
		return c, nil
	}
	legacy, err := applyLegacyEnv(fs, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c.legacy = legacy
	var p cli.Problems
	p.AddErr(c.agent.Validate())
	r, err := agent.ParseReload(c.reload)
	if err != nil {
		p.AddErr(fmt.Errorf("invalid %w", err))
	}
	c.agent.SRIOVReload = r
	for _, a := range []struct {
		name string
		v    *string
	}{{"metrics-bind-address", &c.metricsAddr}, {"health-probe-bind-address", &c.probeAddr}} {
		norm, ok := cli.ListenAddr(*a.v, true)
		p.Check(ok, a.name, *a.v, cli.ListenAddrAllowed(true))
		*a.v = norm
	}
	p.Check(c.kubeQPS > 0 && cli.Finite(c.kubeQPS), "kube-api-qps", c.kubeQPS, "a number > 0 (Kubernetes API requests per second)")
	p.Check(c.kubeBurst >= 1, "kube-api-burst", c.kubeBurst, "an integer >= 1")
	p.CheckKubeconfig(c.kubeconfig)
	if err := p.Err(); err != nil {
		if len(c.legacy.FromEnv) > 0 {
			// The user may not have typed the flag the problem names.
			return nil, fmt.Errorf("%w (from the environment: %s)", err, strings.Join(c.legacy.FromEnv, ", "))
		}
		return nil, err
	}
	return c, nil
}

func main() { os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr)) }

// runMain runs the command and returns its exit status: 0, 2 for a
// refused command line (one line on stderr, before anything starts), 1
// when the agent cannot run or stops on an error.
func runMain(args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if status, done := cli.Done(cli.Program{Name: "eni-agent", Version: version}, err, err == nil && c.printVersion, stdout, stderr); done {
		return status
	}
	if c.probe != "" {
		return probe(c.probe, stderr)
	}
	// Before anything else, in plain lines: a user switching from the
	// ENI Manager sees at once which of its settings still count.
	for _, n := range c.legacy.Notes {
		fmt.Fprintln(stderr, "eni-agent:", n)
	}
	for _, w := range c.legacy.Warnings {
		fmt.Fprintln(stderr, "eni-agent: warning:", w)
	}
	restCfg, err := kubeconfig.Load(c.kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "eni-agent: finding the Kubernetes API:", err)
		return 1
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap)))
	if err := run(ctrl.SetupSignalHandler(), restCfg, c); err != nil {
		ctrl.Log.Error(err, "eni-agent stopped")
		return 1
	}
	return 0
}

func run(ctx context.Context, restCfg *rest.Config, c *config) error {
	log := ctrl.Log.WithName("setup")
	restCfg = rest.CopyConfig(restCfg)
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
		Cache: agent.CacheOptions(c.agent.NodeName),
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once the cache is filled: before that the agent has not
	// looked at its node yet. Liveness is only the ping, so an API outage
	// never restarts the agent (a restart would fix nothing).
	if err := mgr.AddReadyzCheck("cache-sync", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 500*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("ENINode and NodeENI cache not synced yet")
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

// probe is the exec probe: the image has no shell or curl, and kubelet's
// httpGet probes of a hostNetwork pod go to the node's IP, which would
// make /healthz and /readyz listen on every node address.
func probe(endpoint string, stderr io.Writer) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(endpoint)
	if err != nil {
		fmt.Fprintln(stderr, "eni-agent: probe:", err)
		return 1
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		fmt.Fprintf(stderr, "eni-agent: probe: %s answered %s: %s\n", endpoint, resp.Status, body)
		return 1
	}
	return 0
}
