// Package operator wires the operator's parts — the pod ENI tagger, the
// NodeENI controller and the leaked-ENI collector — into one
// controller-runtime manager, with health and readiness checks and
// leader election. cmd/eni-operator and the sandbox both build the
// manager here, so the sandbox runs exactly what a cluster runs.
package operator

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
	"github.com/eni-operator/eni-operator/internal/readiness"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// LeaderElectionID names the Lease replicas compete for.
const LeaderElectionID = "eni-operator.eni-operator.io"

// Config is everything that shapes a running operator.
type Config struct {
	// MetricsAddr, ProbeAddr and PprofAddr are listen addresses; "0" turns
	// an endpoint off.
	MetricsAddr, ProbeAddr, PprofAddr string
	// MetricsSecure serves /metrics over HTTPS (a self-signed
	// certificate) to clients the API server authenticates (TokenReview)
	// and authorises (SubjectAccessReview: get on the /metrics URL).
	MetricsSecure  bool
	LeaderElection LeaderElection
	// GracefulShutdownTimeout bounds how long running reconciles may take
	// to finish after a stop signal before the manager gives up on them.
	GracefulShutdownTimeout time.Duration
	// ClusterName scopes and tags the NodeENI controller's ENIs; without
	// it the NodeENI controller and the collector stay off.
	ClusterName string
	// OwnershipKeySecret names the Secret, in the operator's namespace
	// (--cache-namespace), whose keys sign and verify the proofs that ENIs
	// are the NodeENI controller's own; created with one key if missing.
	OwnershipKeySecret string
	// KubeQPS and KubeBurst bound the operator's Kubernetes API requests.
	KubeQPS   float64
	KubeBurst int
	// EnableTagger runs the pod ENI tagger.
	EnableTagger bool
	EC2          ec2.Config
	Tagger       tagger.Options
	NodeENI      nodeeni.Options
	// PodAddresses registers Multus pods' addresses on NodeENI
	// interfaces (NodeENI multus.registerPodAddresses); it runs with the
	// NodeENI controller unless DisablePodAddresses.
	PodAddresses        podaddrs.Options
	DisablePodAddresses bool
	// DisableReadinessTaint stops the operator lifting the readiness
	// taint (readiness.TaintKey) off nodes whose interfaces are ready.
	DisableReadinessTaint bool
	// Registerer receives every metric (nil: controller-runtime's
	// registry, which the metrics endpoint serves).
	Registerer prometheus.Registerer
	// Version is logged at start.
	Version string
	// MemoryLimitPercent sets the Go soft memory limit to this percent of
	// the container's memory limit (cgroup) at start; 0 leaves the Go
	// runtime's default, and GOMEMLIMIT, when set, wins.
	MemoryLimitPercent int
	// GCPercent is the Go garbage collector's target heap growth (GOGC)
	// set at start; GOGC, when set, wins.
	GCPercent int
}

// LeaderElection configures the Lease that lets only one replica act.
type LeaderElection struct {
	Enabled   bool
	Namespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// leader election timings (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel gives the Lease up on a clean stop, so a rolling
	// update hands over at once instead of after LeaseDuration. Safe
	// because the manager returns only after every runnable stopped.
	ReleaseOnCancel bool
}

// DefaultConfig returns the defaults the flags use.
func DefaultConfig() Config {
	return Config{
		MetricsAddr: ":8090", ProbeAddr: ":8081", PprofAddr: "0", MetricsSecure: true,
		LeaderElection: LeaderElection{
			// The pod's namespace (downward API), as for the ledger; empty
			// leaves controller-runtime to read the service account's, which
			// exists only in a cluster.
			Namespace:     os.Getenv("POD_NAMESPACE"),
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true,
		},
		GracefulShutdownTimeout: 30 * time.Second,
		ClusterName:             os.Getenv("CLUSTER_NAME"),
		OwnershipKeySecret:      DefaultOwnershipKeySecret,
		KubeQPS:                 100, KubeBurst: 200,
		EnableTagger: true,
		EC2:          ec2.DefaultConfig(),
		Tagger:       tagger.DefaultOptions(),
		NodeENI:      nodeeni.DefaultOptions(),
		Version:      "dev",
		// Room for what the Go runtime does not count (stacks, the
		// binary's mappings) and a margin under the OOM killer.
		MemoryLimitPercent: 90,
		GCPercent:          50,
	}
}

// BindFlags registers the operator's flags on fs, with c's values as
// defaults (the EC2, tagger and NodeENI flags are bound by their packages).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsAddr, "metrics-bind-address", c.MetricsAddr, "address of the Prometheus /metrics endpoint: host:port, :port or a bare port (0 turns it off)")
	fs.BoolVar(&c.MetricsSecure, "metrics-secure", c.MetricsSecure, "serve /metrics over HTTPS to authenticated and authorised clients only (a bearer token allowed to get the /metrics URL); false serves plain HTTP to anyone who reaches the address")
	fs.StringVar(&c.ProbeAddr, "health-probe-bind-address", c.ProbeAddr, "address of the /healthz (liveness) and /readyz (readiness: caches synced) endpoints: host:port, :port or a bare port (0 turns them off)")
	fs.StringVar(&c.PprofAddr, "pprof-bind-address", c.PprofAddr, "address of the pprof endpoints: host:port, :port or a bare port (0 turns them off)")
	le := &c.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "elect a leader, so only one replica acts (set it when running more than one)")
	fs.StringVar(&le.Namespace, "leader-election-namespace", le.Namespace, "namespace of the leader election Lease (default: the pod's namespace)")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "how long a Lease is valid: non-leaders wait this long after the last renewal before taking over")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "how long the leader keeps trying to renew before it gives up leadership (and exits)")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "how often candidates try to acquire or renew the Lease")
	fs.BoolVar(&le.ReleaseOnCancel, "leader-elect-release-on-cancel", le.ReleaseOnCancel, "give the Lease up on a clean shutdown so the next replica takes over at once")
	fs.DurationVar(&c.GracefulShutdownTimeout, "graceful-shutdown-timeout", c.GracefulShutdownTimeout, "how long running work may take to finish after SIGTERM (>= 0)")
	fs.StringVar(&c.ClusterName, "cluster-name", c.ClusterName, "cluster name written on and scoping the ENIs the NodeENI controller creates (env CLUSTER_NAME): 1-100 letters, digits, - and _, starting with a letter or digit, no placeholder such as CHANGE-ME; the NodeENI controller and collector stay off without it")
	fs.StringVar(&c.OwnershipKeySecret, "ownership-key-secret", c.OwnershipKeySecret, "Secret in the operator's namespace (--cache-namespace) holding the keys that prove which ENIs the NodeENI controller created or adopted; created with one random key when missing; the key whose name sorts last signs, all verify (rotation: docs/security.md, Ownership proofs)")
	fs.Float64Var(&c.KubeQPS, "kube-api-qps", c.KubeQPS, "Kubernetes API requests per second the operator allows itself (> 0; a synced pod costs two small patches)")
	fs.IntVar(&c.KubeBurst, "kube-api-burst", c.KubeBurst, "burst of Kubernetes API requests (>= 1)")
	fs.BoolVar(&c.EnableTagger, "enable-tagger", c.EnableTagger, "run the pod ENI tagger")
	fs.IntVar(&c.GCPercent, "gc-percent", c.GCPercent, "the Go garbage collector's target heap growth over the live heap, in percent (GOGC): below Go's 100, RSS stays closer to what the operator holds after bursts and restarts, for a little more GC CPU; the GOGC environment variable, when set, wins (10-1000)")
	fs.IntVar(&c.MemoryLimitPercent, "memory-limit-percent", c.MemoryLimitPercent, "set the Go soft memory limit to this percent of the container's memory limit (cgroup v2 or v1), so garbage collection tightens before the OOM killer acts; 0 turns it off, and the GOMEMLIMIT environment variable, when set, wins (0-100)")
	c.EC2.BindFlags(fs)
	c.Tagger.BindFlags(fs)
	c.NodeENI.BindFlags(fs)
	fs.BoolFunc("enable-multus-pod-addresses", "register Multus pods' addresses on the ENIs of NodeENIs that ask for it (multus.registerPodAddresses); its pod watch keeps next to nothing of pods without a secondary network (default true)", func(s string) error {
		on, err := strconv.ParseBool(s)
		c.DisablePodAddresses = !on
		return err
	})
	fs.BoolFunc("enable-readiness-taint", "lift the taint "+readiness.TaintKey+":NoSchedule, which nodes opt into by registering with it (kubelet --register-with-taints, Karpenter startupTaints), once every NodeENI selecting the node has its interfaces attached and configured (default true)", func(s string) error {
		on, err := strconv.ParseBool(s)
		c.DisableReadinessTaint = !on
		return err
	})
}

// Validate checks every value the flags set, before anything starts, and
// normalises the listen addresses (a bare port such as 8090, which
// k8s-eni-tagger accepted, becomes :8090). Its error is one line naming
// each refused flag, its value and what is allowed.
func (c *Config) Validate() error {
	var p cli.Problems
	for _, a := range []struct {
		name string
		v    *string
	}{{"metrics-bind-address", &c.MetricsAddr}, {"health-probe-bind-address", &c.ProbeAddr}, {"pprof-bind-address", &c.PprofAddr}} {
		norm, ok := cli.ListenAddr(*a.v, true)
		p.Check(ok, a.name, *a.v, cli.ListenAddrAllowed(true))
		if ok {
			*a.v = norm
		}
	}
	le := c.LeaderElection
	p.Check(le.Namespace == "" || cli.DNSLabel(le.Namespace), "leader-election-namespace", le.Namespace,
		"a namespace name (lowercase letters, digits and '-', at most 63), or empty for the pod's namespace")
	p.Check(le.LeaseDuration > 0, "leader-elect-lease-duration", le.LeaseDuration, "a duration > 0, such as 15s")
	p.Check(le.RenewDeadline > 0, "leader-elect-renew-deadline", le.RenewDeadline, "a duration > 0, such as 10s")
	p.Check(le.RetryPeriod > 0, "leader-elect-retry-period", le.RetryPeriod, "a duration > 0, such as 2s")
	// client-go refuses these at start (its jitter factor is 1.2); say
	// which flags are wrong before anything starts instead.
	if le.Enabled && le.RetryPeriod > 0 && le.RenewDeadline > 0 && le.LeaseDuration > 0 &&
		(float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) || le.LeaseDuration <= le.RenewDeadline) {
		p.AddErr(fmt.Errorf("invalid leader election timings --leader-elect-lease-duration=%s --leader-elect-renew-deadline=%s --leader-elect-retry-period=%s: they must satisfy lease-duration > renew-deadline > 1.2 x retry-period",
			le.LeaseDuration, le.RenewDeadline, le.RetryPeriod))
	}
	p.Check(c.GracefulShutdownTimeout >= 0, "graceful-shutdown-timeout", c.GracefulShutdownTimeout, "a duration >= 0, such as 30s (0: do not wait for running work)")
	p.Check(cli.DNSLabel(c.OwnershipKeySecret), "ownership-key-secret", c.OwnershipKeySecret, "a Secret name (lowercase letters, digits and '-', at most 63)")
	if c.ClusterName != "" {
		if why := cli.ClusterName(c.ClusterName); why != "" {
			p.Add("cluster-name", c.ClusterName, why)
		}
	}
	p.Check(c.KubeQPS > 0 && cli.Finite(c.KubeQPS), "kube-api-qps", c.KubeQPS, "a number > 0 (Kubernetes API requests per second)")
	p.Check(c.KubeBurst >= 1, "kube-api-burst", c.KubeBurst, "an integer >= 1")
	p.Check(c.GCPercent >= 10 && c.GCPercent <= 1000, "gc-percent", c.GCPercent, "an integer from 10 to 1000")
	p.Check(c.MemoryLimitPercent >= 0 && c.MemoryLimitPercent <= 100, "memory-limit-percent", c.MemoryLimitPercent, "an integer from 0 (off) to 100")
	p.AddErr(c.EC2.Validate())
	p.AddErr(c.Tagger.Validate())
	p.AddErr(c.NodeENI.Validate())
	return p.Err()
}
