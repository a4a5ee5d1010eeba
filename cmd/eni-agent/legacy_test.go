package main

import (
	"bytes"

	"slices"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/clitest"
)

// enimgrEnv is every environment variable the ENI Manager of
// aws-multi-eni-controller v1.3.x reads (cmd/eni-manager/main.go,
// pkg/config/config.go's ENI Manager part, the image's entry point), and
// those its chart sets in the ENI Manager's DaemonSet, with the chart
// value behind each ("" when none).
var enimgrEnv = map[string]string{
	"NODE_NAME":                     "",
	"SRIOV_DP_CONFIG_PATH":          "eniManager.dpdk.sriovDPConfigPath",
	"DEFAULT_DPDK_DRIVER":           "eniManager.dpdk.driver",
	"ENABLE_DPDK":                   "eniManager.dpdk.enabled",
	"DPDK_BINDING_SCRIPT":           "eniManager.dpdk.bindingScript",
	"DPDK_RESOURCE_NAMES":           "eniManager.dpdk.resourceNames",
	"DEFAULT_MTU":                   "eniManager.defaultMTU",
	"INTERFACE_MTUS":                "",
	"ENI_PATTERN":                   "", // eniManager.eniPattern sets the flag --eni-pattern
	"IGNORE_INTERFACES":             "", // eniManager.ignoreInterfaces sets --ignore-interfaces
	"INTERFACE_UP_TIMEOUT":          "",
	"INTERFACE_MAPPING_STORE_PATH":  "",
	"COMPONENT":                     "",
	"LOG_LEVEL":                     "logLevel",
	"METRICS_PORT":                  "metrics.port",
	"AWS_REGION":                    "awsRegion",
	"IMDS_AUTO_CONFIGURE_HOP_LIMIT": "imds.autoConfigureHopLimit",
	"IMDS_HOP_LIMIT":                "imds.hopLimit",
	"IMDS_AGGRESSIVE_CONFIGURATION": "imds.aggressiveConfiguration",
}

// The table covers the ENI Manager's list exactly, each entry with what
// to do and, when the agent does not honour it, what replaces it.
func TestLegacySettingsCoverTheENIManager(t *testing.T) {
	seen := map[string]bool{}
	var c config
	fs := flags(&c)
	for _, s := range legacySettings() {
		chart, ok := enimgrEnv[s.Env]
		switch {
		case !ok:
			t.Errorf("%s: not an ENI Manager setting", s.Env)
		case seen[s.Env]:
			t.Errorf("%s: twice", s.Env)
		case s.Chart != chart:
			t.Errorf("%s: chart value %q, want %q", s.Env, s.Chart, chart)
		}
		seen[s.Env] = true
		switch s.Action {
		case legacyHonoured:
			if fs.Lookup(s.Flag) == nil {
				t.Errorf("%s: honoured as --%s, which is no flag", s.Env, s.Flag)
			}
		case legacyIgnored, legacyRefused:
			if s.Flag != "" || s.Replacement == "" {
				t.Errorf("%s: %s needs a replacement and no flag", s.Env, s.Action)
			}
		default:
			t.Errorf("%s: action %q", s.Env, s.Action)
		}
	}
	for env := range enimgrEnv {
		if !seen[env] {
			t.Errorf("%s: the ENI Manager's setting is not mapped", env)
		}
	}
}

// Each setting with a value a user may have kept: where it goes, or the
// warning or refusal naming what replaces it.
func TestLegacyEnvMapping(t *testing.T) {
	type want struct {
		action  legacyAction // honoured: the flag has the value; ignored: warned; refused: error
		flag    string
		mention string // in the warning or error: the replacement
	}
	tests := []struct {
		env, value string
		args       []string // the command line
		want       want
	}{
		{"NODE_NAME", "ip-10-0-0-1", nil, want{legacyHonoured, "node-name", ""}},
		{"SRIOV_DP_CONFIG_PATH", "/etc/pcidp/config.json", nil, want{legacyHonoured, "sriov-config", ""}},
		{"DEFAULT_DPDK_DRIVER", "igb_uio", nil, want{legacyHonoured, "dpdk-driver", ""}},
		{"ENABLE_DPDK", "true", nil, want{legacyIgnored, "", "spec.enableDPDK"}},
		{"ENABLE_DPDK", "false", nil, want{legacyIgnored, "", "agent.dpdk.enabled"}},
		{"DPDK_BINDING_SCRIPT", "/opt/dpdk/dpdk-devbind.py", nil, want{legacyIgnored, "", "sysfs"}},
		{"DPDK_RESOURCE_NAMES", "eth1:intel_sriov_netdevice_1", nil, want{legacyIgnored, "", "spec.dpdkResourceName"}},
		{"DEFAULT_MTU", "0", nil, want{action: ""}}, // the chart's default: what the agent does
		{"DEFAULT_MTU", "9001", nil, want{legacyIgnored, "", "spec.mtu"}},
		{"INTERFACE_MTUS", "eth1:9000,eth2:1500", nil, want{legacyIgnored, "", "spec.mtu"}},
		{"ENI_PATTERN", "^(eth|ens|eni|en|enX)[0-9]+", nil, want{action: ""}},
		{"ENI_PATTERN", "^eth[0-9]+", nil, want{legacyIgnored, "", "MAC address"}},
		{"IGNORE_INTERFACES", "tunl0,gre0,gretap0,erspan0,ip_vti0,ip6_vti0,sit0,ip6tnl0,ip6gre0", nil, want{action: ""}},
		{"IGNORE_INTERFACES", "tunl0,eth2", nil, want{legacyRefused, "", "spec.nodeSelector"}},
		{"INTERFACE_UP_TIMEOUT", "5s", nil, want{legacyIgnored, "", "--retry-max"}},
		{"INTERFACE_MAPPING_STORE_PATH", "/var/lib/aws-multi-eni-controller/interface-mappings.json", nil, want{legacyIgnored, "", "--state-file"}},
		{"COMPONENT", "eni-manager", nil, want{action: ""}},
		{"LOG_LEVEL", "debug", nil, want{legacyIgnored, "", "--zap-log-level"}},
		{"METRICS_PORT", "8080", nil, want{legacyIgnored, "", "--metrics-bind-address"}},
		{"AWS_REGION", "us-east-1", nil, want{action: ""}}, // injected by IRSA and Pod Identity too
		{"IMDS_AUTO_CONFIGURE_HOP_LIMIT", "true", nil, want{legacyIgnored, "", "no AWS"}},
		{"IMDS_HOP_LIMIT", "2", nil, want{legacyIgnored, "", "no AWS"}},
		{"IMDS_AGGRESSIVE_CONFIGURATION", "true", nil, want{legacyIgnored, "", "no AWS"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.env] = true
		env := map[string]string{tt.env: tt.value}
		var c config
		fs := flags(&c)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		out, err := applyLegacyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		where := tt.env + "=" + tt.value
		switch tt.want.action {
		case legacyHonoured:
			if err != nil || len(out.Warnings) != 0 || fs.Lookup(tt.want.flag).Value.String() != tt.value {
				t.Errorf("%s: --%s=%q, warnings %v, err %v", where, tt.want.flag, fs.Lookup(tt.want.flag).Value, out.Warnings, err)
			}
		case legacyIgnored:
			if err != nil || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "DEPRECATED: "+where) ||
				!strings.Contains(out.Warnings[0], tt.want.mention) {
				t.Errorf("%s: warnings %q, err %v; want one naming %q", where, out.Warnings, err, tt.want.mention)
			}
		case legacyRefused:
			if err == nil || !strings.Contains(err.Error(), tt.want.mention) || !strings.Contains(err.Error(), "unset "+tt.env) ||
				strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: err %v; want a one-line refusal naming %q", where, err, tt.want.mention)
			}
		default:
			if err != nil || len(out.Warnings) != 0 {
				t.Errorf("%s: agrees with the agent, yet warnings %v, err %v", where, out.Warnings, err)
			}
		}
	}
	for env := range enimgrEnv {
		if !covered[env] {
			t.Errorf("%s: no case", env)
		}
	}
}

// A flag given on the command line wins over the ENI Manager's variable.
func TestLegacyEnvFlagWins(t *testing.T) {
	t.Setenv("SRIOV_DP_CONFIG_PATH", "/etc/pcidp/config.json")
	t.Setenv("DEFAULT_DPDK_DRIVER", "igb_uio")
	c, err := parse([]string{"--node-name=n1", "--sriov-config=/var/lib/pcidp/config.json"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.agent.SRIOVConfig != "/var/lib/pcidp/config.json" || c.agent.DefaultDPDKDriver != "igb_uio" {
		t.Fatalf("sriov-config %q, dpdk-driver %q", c.agent.SRIOVConfig, c.agent.DefaultDPDKDriver)
	}
	if !slices.ContainsFunc(c.legacy.Notes, func(n string) bool { return strings.Contains(n, "--sriov-config is given and wins") }) {
		t.Fatalf("notes %q", c.legacy.Notes)
	}
}

// A refused setting stops the agent before anything starts, in one line;
// a bad honoured value is judged by its flag's own check.
func TestLegacyEnvRefusals(t *testing.T) {
	clitest.NoCluster(t)
	for env, value := range map[string]string{"IGNORE_INTERFACES": "eth1", "SRIOV_DP_CONFIG_PATH": "pcidp/config.json", "DEFAULT_DPDK_DRIVER": "../x"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, value)
			var stdout, stderr bytes.Buffer
			code := runMain([]string{"--node-name=n1"}, &stdout, &stderr)
			msg := stderr.String()
			if code != 2 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, value) ||
				(env != "IGNORE_INTERFACES" && !strings.Contains(msg, "from the environment: "+env+" as --")) {
				t.Fatalf("exit %d, stderr %q", code, msg)
			}
		})
	}
}

// Warnings are printed before the agent does anything, one line each.
func TestLegacyEnvWarningsPrinted(t *testing.T) {
	clitest.NoCluster(t)
	t.Setenv("DEFAULT_MTU", "9001")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"--node-name=n1"}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "eni-agent: warning: DEPRECATED: DEFAULT_MTU=9001") {
		t.Fatalf("exit %d (no kubeconfig: 1), stderr %q", code, stderr.String())
	}
}
