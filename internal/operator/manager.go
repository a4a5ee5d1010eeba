package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/attachdefs"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/metricsauth"
	"github.com/eni-operator/eni-operator/internal/nodeeni"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
	"github.com/eni-operator/eni-operator/internal/podranges"
	"github.com/eni-operator/eni-operator/internal/readiness"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// Scheme returns the API types the operator reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// cacheSyncTimeout bounds one readiness probe's wait for the informer
// caches; kubelet's default probe timeout is 1s.
const cacheSyncTimeout = 500 * time.Millisecond

// NewManager builds the operator's manager from c: the EC2 client (found
// the standard AWS way: IRSA, Pod Identity, instance profile, AWS_*
// environment, AWS_ENDPOINT_URL_EC2), the tagger, the NodeENI controller
// and collector as c enables them, /healthz and /readyz. Start it with
// its Start method; it runs until ctx passed there is done.
func NewManager(ctx context.Context, restCfg *rest.Config, c Config) (manager.Manager, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	reg := c.Registerer
	if reg == nil {
		reg = metrics.Registry
	}
	c.Registerer = reg
	// One set of tag policies for the pod cache's transform and the
	// tagger.
	policies, err := tagger.NewPolicies(c.Tagger.DefaultTags)
	if err != nil {
		return nil, fmt.Errorf("--default-tags: %w", err)
	}
	c.Tagger.Policies = policies
	mgr, fence, err := newControllerManager(restCfg, c)
	if err != nil {
		return nil, err
	}
	if fence != nil {
		c.EC2.WriteGate = fence.check
	}
	c.EC2.Registerer = reg
	awsCtx, cancel := context.WithTimeout(ctx, time.Minute)
	ec2c, err := ec2.New(awsCtx, c.EC2)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("configuring the EC2 client: %w", err)
	}
	// EC2 failing for --ec2-unready-after (no answer, authentication or
	// server errors, none succeeding) makes the replica unready, not
	// unlive: a restart fixes none of these and would lose the Lease.
	// Only the leader calls EC2, so only it can turn unready this way.
	if err := mgr.AddReadyzCheck("ec2", ec2c.Health().Check); err != nil {
		return nil, err
	}
	// One picture of EC2 for the whole process: both parts read it and
	// every write goes through it.
	state := ec2.NewState(ec2c)
	if err := mgr.Add(state); err != nil {
		return nil, err
	}
	log := ctrl.Log.WithName("setup")
	if c.EnableTagger {
		c.Tagger.Registerer = reg
		c.Tagger.KubeAPIQPS, c.Tagger.KubeAPIBurst = c.KubeQPS, c.KubeBurst
		if _, err := tagger.Setup(mgr, state, c.Tagger); err != nil {
			return nil, fmt.Errorf("pod tagger: %w", err)
		}
		log.Info("pod tagger enabled", "annotation", c.Tagger.AnnotationKey, "dryRun", c.Tagger.DryRun)
	}
	nodeENIOn, err := addNodeENI(ctx, restCfg, mgr, state, c)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(permissionCheck(ec2c, c, nodeENIOn, reg)); err != nil {
		return nil, err
	}
	log.Info("manager built", "version", c.Version, "vpc", ec2c.VPCID(), "leaderElection", c.LeaderElection.Enabled)
	return mgr, nil
}

// newControllerManager builds the controller-runtime manager: the
// Kubernetes client's budget, the trimmed pod cache, metrics, probes and
// leader election, with its fence on every write (fence.go; nil without
// leader election).
func newControllerManager(restCfg *rest.Config, c Config) (manager.Manager, *leaseFence, error) {
	restCfg = rest.CopyConfig(restCfg)
	restCfg.QPS, restCfg.Burst = float32(c.KubeQPS), c.KubeBurst
	scheme, err := Scheme()
	if err != nil {
		return nil, nil, err
	}
	var fence *leaseFence
	var lock resourcelock.Interface
	events := &lateRecorders{}
	if c.LeaderElection.Enabled {
		if fence, lock, restCfg, err = fenceOptions(restCfg, c.LeaderElection, events); err != nil {
			return nil, nil, err
		}
	}
	// One budget for every client of the manager (one REST client per
	// resource, the event sink): without a limiter of its own in the
	// config, client-go gives each of them --kube-api-qps, and the
	// 10,000-pod bench burst made 234-318 requests/s at 100. The Lease
	// lock above keeps its own: queued behind a burst of pod writes, a
	// renewal would miss its deadline and the leader would exit.
	restCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
	// The informer holds every pod of the cluster: keep only what the
	// tagger reads, and of most pods next to nothing (tagger.PodCache).
	podCache, newCache := tagger.PodCache(c.Tagger)
	le := c.LeaderElection
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions(c),
		HealthProbeBindAddress:        c.ProbeAddr,
		PprofBindAddress:              c.PprofAddr,
		LeaderElection:                le.Enabled,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       le.Namespace,
		LeaderElectionReleaseOnCancel: le.ReleaseOnCancel,
		LeaseDuration:                 &le.LeaseDuration,
		RenewDeadline:                 &le.RenewDeadline,
		RetryPeriod:                   &le.RetryPeriod,
		GracefulShutdownTimeout:       &c.GracefulShutdownTimeout,
		Cache:                         cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: podCache}},
		NewCache:                      newCache,
	}
	// The fence's lock (fence.go), built from the same settings.
	opts.LeaderElectionResourceLockInterface = lock
	mgr, err := ctrl.NewManager(restCfg, opts)
	if err != nil {
		return nil, nil, err
	}
	events.mgr = mgr
	// Liveness is the process answering: it must not depend on AWS or on
	// the API server, or an outage of either would restart every replica.
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	if err := mgr.AddReadyzCheck("cache-sync", cacheSynced(mgr.GetCache())); err != nil {
		return nil, nil, err
	}
	// Free heap back to the OS after the initial LIST and after bursts
	// (memory.go): without it RSS stays near the peak's heap goal.
	if err := mgr.Add(newMemoryReleaser(mgr.GetCache())); err != nil {
		return nil, nil, err
	}
	return mgr, fence, nil
}

// addNodeENI adds the NodeENI controller and the collector when they are
// on and a cluster name scopes them, and says whether it did.
func addNodeENI(ctx context.Context, restCfg *rest.Config, mgr manager.Manager, state *ec2.State, c Config) (bool, error) {
	log := ctrl.Log.WithName("setup")
	switch {
	case c.NodeENI.DisableController && c.NodeENI.DisableCollector:
		return false, nil
	case c.ClusterName == "":
		log.Error(nil, "NodeENI controller and ENI collector are OFF: set --cluster-name (or CLUSTER_NAME) to run them")
		return false, nil
	}
	c.NodeENI.ClusterName = c.ClusterName
	c.NodeENI.DryRun = c.Tagger.DryRun
	c.NodeENI.Registerer = c.Registerer
	keys, err := startOwnershipKeys(ctx, restCfg, mgr, c, log)
	if err != nil {
		return false, fmt.Errorf("NodeENI controller: %w", err)
	}
	c.NodeENI.Keys = keys
	if c.EnableTagger && c.Tagger.TagPolicies {
		// ENITagPolicies with a nodeSelector tag NodeENI interfaces; the
		// tagger's policy controller compiles them.
		c.NodeENI.TagPolicies = c.Tagger.Policies
	}
	if err := nodeeni.Setup(mgr, state, c.NodeENI); err != nil {
		return false, fmt.Errorf("NodeENI controller: %w", err)
	}
	log.Info("NodeENI controller enabled", "cluster", c.ClusterName)
	if !c.NodeENI.DisableController {
		// The NodeENIs' Multus attachment definitions, beside the
		// controller that resolves their subnets.
		if err := attachdefs.Setup(mgr, attachdefs.Options{SkipNameValidation: c.NodeENI.SkipNameValidation}); err != nil {
			return false, fmt.Errorf("attachment definitions controller: %w", err)
		}
		if err := podranges.Setup(mgr, state, podranges.Options{ClusterName: c.ClusterName, Keys: keys, DryRun: c.NodeENI.DryRun,
			SkipNameValidation: c.NodeENI.SkipNameValidation}); err != nil {
			return false, fmt.Errorf("pods' range reservations: %w", err)
		}
	}
	if !c.NodeENI.DisableController && !c.DisableReadinessTaint {
		if err := readiness.Setup(mgr, readiness.Options{SkipNameValidation: c.NodeENI.SkipNameValidation}); err != nil {
			return false, fmt.Errorf("readiness taint controller: %w", err)
		}
	}
	switch {
	case c.NodeENI.DisableController:
	case c.DisablePodAddresses || c.NodeENI.DryRun:
		reason, why := podaddrs.ReasonRegistrationDisabled, "this operator runs with --enable-multus-pod-addresses=false: Multus pod addresses are not registered on the ENIs; ask its administrator to turn it on, or remove multus.registerPodAddresses"
		if !c.DisablePodAddresses {
			reason, why = podaddrs.ReasonDryRun, "dry run (--dry-run): Multus pod addresses are not registered on the ENIs (no assign or unassign)"
			log.Info(why)
		}
		if err := podaddrs.SetupOff(mgr, reason, why, c.PodAddresses.StatusInterval); err != nil {
			return false, fmt.Errorf("pod address registration (Multus): %w", err)
		}
	default:
		c.PodAddresses.SkipNameValidation, c.PodAddresses.Namespace = c.NodeENI.SkipNameValidation, c.Tagger.WatchNamespace
		c.PodAddresses.InventoryScope, c.PodAddresses.Registerer = nodeeni.InventoryScope, c.Registerer
		if err := podaddrs.Setup(mgr, state, c.PodAddresses); err != nil {
			return false, fmt.Errorf("pod address registration (Multus): %w", err)
		}
	}
	return true, nil
}

// permissionCheck is the one start-up check of the EC2 permissions of
// every enabled part, with DryRun calls (each action once). The NodeENI
// actions scoped to the cluster's ENIs are checked at first use instead
// (nodeeni.ScopedIAMActions).
func permissionCheck(ec2c *ec2.Client, c Config, nodeENIOn bool, reg prometheus.Registerer) *ec2.PermissionCheck {
	var actions []string
	var opts []ec2.PermissionOption
	if c.EnableTagger {
		actions = append(actions, tagger.RequiredIAMActions()...)
	}
	if nodeENIOn {
		actions = append(actions, nodeeni.PreflightIAMActions()...)
		opts = append(opts, ec2.WithCreateTags(map[string]string{eniplan.TagCluster: c.ClusterName}))
	}
	slices.Sort(actions)
	return &ec2.PermissionCheck{Client: ec2c, Actions: slices.Compact(actions), Options: opts, Missing: ec2.NewPermissionGauge(reg)}
}

// metricsOptions serves /metrics as c says: with --metrics-secure (the
// default) over HTTPS with a self-signed certificate, answering only
// requests whose bearer token the API server authenticates and allows to
// get the /metrics URL (RBAC nonResourceURLs); otherwise plain HTTP.
func metricsOptions(c Config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: c.MetricsAddr}
	if c.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = metricsauth.Provider
	}
	return o
}

// Run builds the manager and runs it until ctx is done.
func Run(ctx context.Context, restCfg *rest.Config, c Config) error {
	mgr, err := NewManager(ctx, restCfg, c)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// cacheSynced is the readiness check: ready once the informer caches the
// controllers read have synced. Before that a replica would act on a
// partial view of the cluster.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncTimeout)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced yet")
		}
		return nil
	}
}
