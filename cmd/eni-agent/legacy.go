package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// The ENI Manager of aws-multi-eni-controller, which eni-agent replaces,
// was configured through environment variables (its chart set them from
// eniManager.* values). A user switching over may keep them in the
// DaemonSet: each is either honoured, as the fallback of the agent's flag
// (a flag given on the command line wins), or ignored with a warning that
// names what replaces it, or refused when ignoring it would make the
// agent do what the user asked it not to.

// legacyAction is what the agent does with one ENI Manager setting.
type legacyAction string

const (
	legacyHonoured legacyAction = "honoured" // read as Flag when the flag is not given
	legacyIgnored  legacyAction = "ignored"  // no effect; a warning names the replacement
	legacyRefused  legacyAction = "refused"  // some values stop the agent before it starts
)

// legacySetting is one environment variable of the ENI Manager.
type legacySetting struct {
	Env    string
	Chart  string // the ENI Manager chart's value that set it; "" when none did
	Action legacyAction
	// Flag is the agent's flag an honoured setting feeds.
	Flag string
	// Replacement says, for the others, what does the job in the agent.
	Replacement string
	// agrees tells values that ask for what the agent does anyway: they
	// are accepted without a warning (nil: every value is warned about).
	agrees func(v string) bool
	// refuses tells, for a refused setting, the values the agent cannot
	// honour; the others are ignored like those of an ignored setting.
	refuses func(v string) bool
}

// The ENI Manager's defaults, which ask for nothing the agent does not do.
const (
	enimgrENIPattern      = "^(eth|ens|eni|en)[0-9]+"
	enimgrChartENIPattern = "^(eth|ens|eni|en|enX)[0-9]+"
)

// enimgrIgnored are the tunnel devices the ENI Manager ignored by default;
// none is ever an ENI's interface.
func enimgrIgnored() []string {
	return []string{"tunl0", "gre0", "gretap0", "erspan0", "ip_vti0", "ip6_vti0", "sit0", "ip6tnl0", "ip6gre0"}
}

// legacySettings is every environment variable the ENI Manager (v1.3.x,
// cmd/eni-manager and pkg/config) read, with the ones its chart set in
// the ENI Manager's DaemonSet although no code of it read them. Chart is
// the chart value behind the variable; eniManager.eniPattern and
// eniManager.ignoreInterfaces set the flags --eni-pattern and
// --ignore-interfaces, not these variables.
func legacySettings() []legacySetting {
	is := func(vals ...string) func(string) bool {
		return func(v string) bool { return slices.Contains(vals, strings.TrimSpace(v)) }
	}
	noAWS := "nothing: the agent holds no AWS credentials and makes no AWS call"
	return []legacySetting{
		{Env: "NODE_NAME", Action: legacyHonoured, Flag: "node-name"},
		{Env: "SRIOV_DP_CONFIG_PATH", Chart: "eniManager.dpdk.sriovDPConfigPath", Action: legacyHonoured, Flag: "sriov-config"},
		{Env: "DEFAULT_DPDK_DRIVER", Chart: "eniManager.dpdk.driver", Action: legacyHonoured, Flag: "dpdk-driver"},
		{Env: "ENABLE_DPDK", Chart: "eniManager.dpdk.enabled", Action: legacyIgnored,
			Replacement: "each NodeENI's spec.enableDPDK decides (the ENI Manager did not gate binding on ENABLE_DPDK either); the privilege to bind comes from the chart value agent.dpdk.enabled"},
		{Env: "DPDK_BINDING_SCRIPT", Chart: "eniManager.dpdk.bindingScript", Action: legacyIgnored,
			Replacement: "nothing: the agent binds through sysfs itself (driver_override, unbind, drivers_probe), no dpdk-devbind script"},
		{Env: "DPDK_RESOURCE_NAMES", Chart: "eniManager.dpdk.resourceNames", Action: legacyIgnored,
			Replacement: "each NodeENI's spec.dpdkResourceName (the ENI Manager did not use DPDK_RESOURCE_NAMES either)"},
		{Env: "DEFAULT_MTU", Chart: "eniManager.defaultMTU", Action: legacyIgnored, agrees: is("", "0"),
			Replacement: "each NodeENI's spec.mtu (the ENI Manager applied only spec.mtu too); interfaces keep their MTU otherwise"},
		{Env: "INTERFACE_MTUS", Action: legacyIgnored,
			Replacement: "each NodeENI's spec.mtu (the ENI Manager applied only spec.mtu too)"},
		{Env: "ENI_PATTERN", Action: legacyIgnored, agrees: is(enimgrENIPattern, enimgrChartENIPattern),
			Replacement: "nothing: the agent finds each ENI's interface by the MAC address in its node's ENINode, never by name"},
		{Env: "IGNORE_INTERFACES", Action: legacyRefused, agrees: onlyTunnels, refuses: notOnlyTunnels,
			Replacement: "keeping the ENI's NodeENI off the node (spec.nodeSelector): the agent touches exactly the interfaces of the NodeENI ENIs attached to its node (found by MAC) and no other"},
		{Env: "INTERFACE_UP_TIMEOUT", Action: legacyIgnored,
			Replacement: "nothing: link events wake the agent when an interface appears, and --retry-max bounds its retries"},
		{Env: "INTERFACE_MAPPING_STORE_PATH", Action: legacyIgnored,
			Replacement: "--state-file, the agent's own node-local state (the ENI Manager's mapping file is not read; the agent reads names, MTUs and drivers from the host)"},
		{Env: "COMPONENT", Action: legacyIgnored, agrees: is("eni-manager"),
			Replacement: "nothing: eni-agent is its own binary and image entry point"},
		{Env: "LOG_LEVEL", Chart: "logLevel", Action: legacyIgnored, Replacement: "--zap-log-level (chart value agent.logging.level)"},
		{Env: "METRICS_PORT", Chart: "metrics.port", Action: legacyIgnored, Replacement: "--metrics-bind-address (chart value agent.metricsPort)"},
		// Also injected by IRSA and EKS Pod Identity for every pod: no warning.
		{Env: "AWS_REGION", Chart: "awsRegion", Action: legacyIgnored, Replacement: noAWS, agrees: func(string) bool { return true }},
		{Env: "IMDS_AUTO_CONFIGURE_HOP_LIMIT", Chart: "imds.autoConfigureHopLimit", Action: legacyIgnored, Replacement: noAWS},
		{Env: "IMDS_HOP_LIMIT", Chart: "imds.hopLimit", Action: legacyIgnored, Replacement: noAWS},
		{Env: "IMDS_AGGRESSIVE_CONFIGURATION", Chart: "imds.aggressiveConfiguration", Action: legacyIgnored, Replacement: noAWS},
	}
}

// onlyTunnels tells an IGNORE_INTERFACES list of the ENI Manager's
// default tunnel devices (or empty), which the agent never touches anyway.
func onlyTunnels(v string) bool {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(enimgrIgnored(), name) {
			return false
		}
	}
	return true
}

func notOnlyTunnels(v string) bool { return !onlyTunnels(v) }

// legacyOutcome is what applyLegacyEnv made of the environment.
type legacyOutcome struct {
	Notes    []string // honoured settings, one line each
	Warnings []string // ignored settings, one line each
	FromEnv  []string // flags set from the ENI Manager's variables, as "ENV as --flag"
}

// applyLegacyEnv reads the ENI Manager's environment variables after the
// command line was parsed into fs: an honoured one sets its flag unless
// the flag was given (flag > env; the flag's own check then judges the
// value), an ignored one is warned about, a refused value is an error
// naming the replacement.
func applyLegacyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) (legacyOutcome, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var out legacyOutcome
	for _, s := range legacySettings() {
		v, ok := lookup(s.Env)
		if !ok || v == "" {
			continue
		}
		switch {
		case s.Action == legacyHonoured && given[s.Flag]:
			out.Notes = append(out.Notes, fmt.Sprintf("%s is the ENI Manager's setting of --%s; --%s is given and wins", s.Env, s.Flag, s.Flag))
		case s.Action == legacyHonoured:
			if err := fs.Set(s.Flag, v); err != nil {
				return out, fmt.Errorf("invalid %s=%s (the ENI Manager's setting, read as --%s): %w", s.Env, v, s.Flag, err)
			}
			if s.Env != "NODE_NAME" { // the flag's documented default: no news
				out.Notes = append(out.Notes, fmt.Sprintf("%s=%s (the ENI Manager's setting) read as --%s", s.Env, v, s.Flag))
				out.FromEnv = append(out.FromEnv, s.Env+" as --"+s.Flag)
			}
		case s.refuses != nil && s.refuses(v):
			return out, fmt.Errorf("%s=%s is the ENI Manager's setting and eni-agent cannot honour it; the replacement is %s: unset %s", s.Env, v, s.Replacement, s.Env)
		case s.agrees != nil && s.agrees(v):
		default:
			out.Warnings = append(out.Warnings, fmt.Sprintf("DEPRECATED: %s=%s (an ENI Manager setting) is ignored by eni-agent; the replacement is %s", s.Env, v, s.Replacement))
		}
	}
	return out, nil
}
