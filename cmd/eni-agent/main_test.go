package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/eni-operator/eni-operator/internal/agent"
)

func TestHelpListsTheFlags(t *testing.T) {
	var out bytes.Buffer
	_, err := parse([]string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, f := range []string{"node-name", "sysfs-root", "sriov-config", "sriov-reload", "state-file", "dpdk-driver",
		"metrics-bind-address", "health-probe-bind-address", "zap-log-level", "version", "kubeconfig", "NODE_NAME"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
}

func TestFlags(t *testing.T) {
	t.Setenv("NODE_NAME", "ip-10-0-0-1")
	c, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	a := c.agent
	if a.NodeName != "ip-10-0-0-1" || a.SysfsRoot != "/sys" || a.SRIOVConfig != "" || a.SRIOVReload.Mode != agent.ReloadNone ||
		a.StateFile != agent.DefaultStateFile || a.DefaultDPDKDriver != "vfio-pci" || c.metricsAddr != ":9810" || c.probeAddr != ":9811" {
		t.Fatalf("defaults %+v %+v", c, a)
	}
	c, err = parse([]string{"--node-name=n1", "--sysfs-root=/host/sys", "--sriov-config=/etc/pcidp/config.json",
		"--sriov-reload=touch:/var/run/eni-agent/sriov-reload", "--state-file=/tmp/s.json", "--dpdk-driver=igb_uio",
		"--retry-max=10s", "--metrics-bind-address=0", "--zap-log-level=debug"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	a = c.agent
	if a.NodeName != "n1" || a.SysfsRoot != "/host/sys" || a.SRIOVConfig != "/etc/pcidp/config.json" ||
		a.SRIOVReload != (agent.Reload{Mode: agent.ReloadTouch, Path: "/var/run/eni-agent/sriov-reload"}) ||
		a.StateFile != "/tmp/s.json" || a.DefaultDPDKDriver != "igb_uio" || a.RetryMax != 10*time.Second || c.metricsAddr != "0" {
		t.Fatalf("parsed %+v %+v", c, a)
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	for _, args := range [][]string{{}, {"--node-name=n", "--sriov-reload=kill"}, {"--node-name=n", "--sriov-reload=touch:rel"}, {"--nope"}, {"--node-name=n", "extra"}} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	if c, err := parse([]string{"--version"}, &bytes.Buffer{}); err != nil || !c.printVersion {
		t.Fatalf("--version without a node name: %v", err)
	}
}
