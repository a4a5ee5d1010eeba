package main

import (
	"errors"
	"flag"
	"strconv"
	"time"

	"github.com/eni-operator/eni-operator/internal/cli"
)

// The two projects eni-operator replaces; their users switch without
// rewriting a command line, an environment or a values file: every
// setting either works here, sets its replacement, or is accepted with a
// warning naming what replaces it (docs/migration.md).
const (
	taggerOrigin   = "k8s-eni-tagger"
	multiENIOrigin = "aws-multi-eni-controller"
)

// taggerFlags are every flag of k8s-eni-tagger (pkg/config). Each also
// reads ENI_TAGGER_<NAME> when not on the command line, as the original
// did through viper; the two it had that do nothing here are registered
// by bindLegacy.
func taggerFlags() []string {
	return []string{
		"metrics-bind-address", "health-probe-bind-address", "leader-elect", "annotation-key",
		"max-concurrent-reconciles", "dry-run", "watch-namespace", "version", "subnet-ids",
		"allow-shared-eni-tagging", "enable-eni-cache", "enable-cache-configmap", "cache-batch-interval",
		"cache-batch-size", "aws-rate-limit-qps", "aws-rate-limit-burst", "pprof-bind-address",
		"tag-namespace", "pod-rate-limit-qps", "pod-rate-limit-burst", "rate-limiter-cleanup-interval",
		"aws-health-max-successes",
	}
}

// multiENIEnv are aws-multi-eni-controller's controller settings (its
// pkg/config, read from the environment only) that have an equivalent
// flag here. The flag, when given, wins.
func multiENIEnv() []cli.EnvVar {
	return []cli.EnvVar{
		{Env: "RECONCILE_PERIOD", Flag: "nodeeni-resync-interval"},
		{Env: "MAX_CONCURRENT_RECONCILES", Flag: "nodeeni-max-concurrent-reconciles"},
		{Env: "MAX_CONCURRENT_ENI_CLEANUP", Flag: "nodeeni-max-parallel-nodes"},
	}
}

// multiENIIgnoredEnv are the rest of aws-multi-eni-controller's
// controller environment: settings with no equivalent here. AWS_REGION
// and the AWS_EC2_METADATA_* / AWS_METADATA_SERVICE_* variables its chart
// sets are the AWS SDK's own and keep working; COMPONENT and NODE_NAME
// select nothing here.
func multiENIIgnoredEnv() []cli.IgnoredEnv {
	o := multiENIOrigin
	spec := "a NodeENI without it gets the CRD's default; set it in the NodeENI's spec"
	cleanup := "the NodeENI controller retries a detach until it completes (--nodeeni-detach-poll-interval) and bounds its EC2 calls with --aws-rate-limit-qps/--aws-max-attempts"
	breaker := "EC2 calls are rate-limited, retried with backoff and reported by ec2_up and /readyz (--aws-rate-limit-qps, --aws-max-attempts, --aws-max-backoff, --ec2-unready-after)"
	imds := "the operator never changes instances' metadata options; set the IMDS hop limit (2 for pods) in the node group's launch template"
	return []cli.IgnoredEnv{
		{Env: "DEFAULT_DEVICE_INDEX", Origin: o, Replacement: "spec.deviceIndex: " + spec},
		{Env: "DEFAULT_DELETE_ON_TERMINATION", Origin: o, Replacement: "spec.deleteOnTermination: " + spec},
		{Env: "DETACHMENT_TIMEOUT", Origin: o, Replacement: cleanup},
		{Env: "MAX_CLEANUP_DURATION", Origin: o, Replacement: cleanup},
		{Env: "CIRCUIT_BREAKER_ENABLED", Origin: o, Replacement: breaker},
		{Env: "CIRCUIT_BREAKER_FAILURE_THRESHOLD", Origin: o, Replacement: breaker},
		{Env: "CIRCUIT_BREAKER_SUCCESS_THRESHOLD", Origin: o, Replacement: breaker},
		{Env: "CIRCUIT_BREAKER_TIMEOUT", Origin: o, Replacement: breaker},
		{Env: "IMDS_AUTO_CONFIGURE_HOP_LIMIT", Origin: o, Replacement: imds},
		{Env: "IMDS_HOP_LIMIT", Origin: o, Replacement: imds},
		{Env: "IMDS_AGGRESSIVE_CONFIGURATION", Origin: o, Replacement: imds},
		{Env: "EC2_INSTANCE_ID", Origin: o, Replacement: "the operator finds nodes' instances from their providerID"},
		{Env: "PRIVATE_IP", Origin: o, Replacement: "the operator finds nodes' instances from their providerID"},
		{Env: "USE_EC2_FACADE", Origin: o, Replacement: "every EC2 call goes through one batched, cached EC2 state"},
		{Env: "LOG_LEVEL", Origin: o, Replacement: "use --zap-log-level (the original did not read it either)"},
		{Env: "METRICS_PORT", Origin: o, Replacement: "use --metrics-bind-address (the original did not read it either)"},
	}
}

// bindLegacy registers the originals' flags that have another name here
// or no effect.
func bindLegacy(fs *flag.FlagSet, l *cli.Legacy) {
	l.Removed(fs, "rate-limiter-cleanup-interval", taggerOrigin,
		"per-pod rate limiters are dropped with their pod; --pod-rate-limit-qps and --pod-rate-limit-burst still set them", checkDuration)
	l.Removed(fs, "aws-health-max-successes", taggerOrigin,
		"EC2's health comes from every EC2 call, without probe calls; --ec2-unready-after says when /readyz fails", checkCount)
	l.Renamed(fs, "metrics-addr", "metrics-bind-address", multiENIOrigin)
	l.Renamed(fs, "enable-leader-election", "leader-elect", multiENIOrigin)
	l.Renamed(fs, "dev-mode", "zap-devel", multiENIOrigin)
}

// applyLegacyEnv sets the flags the command line left alone from the
// originals' environment, and warns about the variables with no effect.
func applyLegacyEnv(fs *flag.FlagSet, l *cli.Legacy, lookup func(string) (string, bool)) error {
	vars := append(cli.PrefixedEnv("ENI_TAGGER_", taggerFlags()...), multiENIEnv()...)
	if err := cli.ApplyEnv(fs, vars, lookup); err != nil {
		return err
	}
	l.CheckIgnoredEnv(multiENIIgnoredEnv(), lookup)
	return nil
}

// checkDuration and checkCount refuse what k8s-eni-tagger refused for
// its two removed flags, so a value it would not start with is not
// silently taken here either.
func checkDuration(s string) error {
	if d, err := time.ParseDuration(s); err != nil || d < 0 {
		return errors.New("a duration >= 0 such as 1m (it has no effect)")
	}
	return nil
}

func checkCount(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return errors.New("an integer >= 0 (it has no effect)")
	}
	return nil
}
