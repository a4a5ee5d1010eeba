package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// DPDK end to end on one node: the ENI's device is bound to vfio-pci
// through a fake sysfs whose kernel makes the interface disappear and
// come back as a real one does, published in the SR-IOV device plugin's
// config next to someone else's entry, and given back to its driver when
// DPDK is switched off and when the NodeENI is deleted — also by an agent
// that was down when it happened.
func TestDPDKAndSRIOVOnANode(t *testing.T) {
	w := newWorld(t, "n", 1)
	k := ens6Kernel(w)
	stampPath := filepath.Join(w.dir, "run", "sriov-reload")
	foreign := `{"resourceName":"intel_sriov_netdevice","selectors":{"vendors":["8086"],"drivers":["iavf"]}}`
	cfgPath := w.sriovConfig(`{"resourceList":[` + foreign + `]}`)
	o := w.options()
	o.SysfsRoot, o.sysfsWrite = k.root, k.write
	o.SRIOVConfig, o.SRIOVReload = cfgPath, Reload{Mode: ReloadTouch, Path: stampPath}

	name := w.name("dpdk")
	eni := w.enis[0].ID
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) {
		s.MTU, s.EnableDPDK, s.DPDKResourceName = 9001, true, "intel.com/sriov_dpdk"
	}, w.attachment(0, v1alpha1.AttachmentAttached))
	a := w.start(o, nil)

	published := func() []map[string]any {
		b, _ := os.ReadFile(cfgPath)
		return resourceList(t, b)
	}
	stampMatches := func() bool {
		cfg, _ := os.ReadFile(cfgPath)
		st, _ := os.ReadFile(stampPath)
		sum := sha256.Sum256(cfg)
		return string(st) == hex.EncodeToString(sum[:])+"\n"
	}
	bound := func() (bool, string) {
		e := w.entries(name)[eni]
		_, linkThere := w.linkByMAC(w.mac(0))
		ok := e.State == v1alpha1.InterfaceConfigured && e.DPDKBound && e.DPDKDriver == "vfio-pci" && e.DPDKPCIAddress == testPCI &&
			e.DPDKResourceName == "intel.com/sriov_dpdk" && e.InterfaceName == "ens6" && k.driverOf(testPCI) == "vfio-pci" && !linkThere
		return ok, fmt.Sprintf("entry %+v, driver %q, link there %v", e, k.driverOf(testPCI), linkThere)
	}
	w.eventually("bound to vfio-pci and reported", bound)
	w.eventually("published next to the other entry, plugin told", func() (bool, string) {
		rl := published()
		ok := len(rl) == 2 && rl[0]["resourceName"] == "intel_sriov_netdevice" && rl[1]["resourceName"] == "sriov_dpdk" &&
			rl[1]["resourcePrefix"] == "intel.com" &&
			reflect.DeepEqual(rl[1]["selectors"], map[string]any{"pciAddresses": []any{testPCI}, "drivers": []any{"vfio-pci"}})
		return ok && stampMatches(), fmt.Sprintf("%v", rl)
	})
	if b, _ := os.ReadFile(filepath.Join(w.dir, "state.json")); !strings.Contains(string(b), `"originalDriver": "ena"`) {
		t.Fatalf("the state file does not remember the original driver:\n%s", b)
	}

	// A restarted agent finds everything in place and writes nothing.
	_ = a.Stop()
	writes := len(k.log())
	a = w.start(o, nil)
	time.Sleep(time.Second)
	if n := len(k.log()); n != writes {
		t.Fatalf("the restarted agent wrote to sysfs again: %+v", k.log()[writes:])
	}
	if ok, seen := bound(); !ok {
		t.Fatalf("after the restart: %s", seen)
	}

	// DPDK switched off: the device goes back to ena, its interface comes
	// back and is configured as a kernel interface; the entry is removed
	// from the plugin's config, the other entry stays.
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.EnableDPDK = false })
	w.eventually("given back to ena and configured", func() (bool, string) {
		e := w.entries(name)[eni]
		l, ok := w.linkByMAC(w.mac(0))
		return ok && l.MTU == 9001 && l.Up && k.driverOf(testPCI) == "ena" && k.overrideOf(testPCI) == "(null)" &&
				e.State == v1alpha1.InterfaceConfigured && !e.DPDKBound && e.DPDKResourceName == "" && e.MTU == 9001,
			fmt.Sprintf("entry %+v, link %+v, driver %q override %q", e, l, k.driverOf(testPCI), k.overrideOf(testPCI))
	})
	w.eventually("unpublished, plugin told", func() (bool, string) {
		rl := published()
		return len(rl) == 1 && rl[0]["resourceName"] == "intel_sriov_netdevice" && stampMatches(), fmt.Sprintf("%v", rl)
	})

	// On again; then the NodeENI is deleted while the agent is down: the
	// next agent gives the device back from what its state file says.
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.EnableDPDK = true })
	w.eventually("bound again", bound)
	_ = a.Stop()
	w.deleteNodeENI(name)
	w.start(o, nil)
	w.eventually("given back to ena after the NodeENI went", func() (bool, string) {
		_, ok := w.linkByMAC(w.mac(0))
		return ok && k.driverOf(testPCI) == "ena" && k.overrideOf(testPCI) == "(null)", fmt.Sprintf("driver %q, link there %v", k.driverOf(testPCI), ok)
	})
	w.eventually("entry of the deleted NodeENI removed from the plugin's config", func() (bool, string) {
		rl := published()
		b, _ := os.ReadFile(filepath.Join(w.dir, "state.json"))
		return len(rl) == 1 && rl[0]["resourceName"] == "intel_sriov_netdevice" && stampMatches() && !strings.Contains(string(b), eni),
			fmt.Sprintf("%v; state %s", rl, b)
	})
}

// A dpdkPCIAddress that names another interface's device (here the
// node's primary, ens5) is refused: the agent reports the ENI Failed and
// writes nothing to sysfs, so the primary keeps its driver.
func TestDPDKRefusesAnotherInterfacesDevice(t *testing.T) {
	w := newWorld(t, "n", 1)
	k := newFakeKernel(t, "ena", "vfio-pci")
	const primaryPCI = "0000:00:05.0"
	k.addDevice(primaryPCI, "ena", "ens5")
	k.addDevice(testPCI, "ena", "ens6")
	w.addLink("ens6", w.mac(0), 1500)
	o := w.options()
	o.SysfsRoot, o.sysfsWrite = k.root, k.write

	name := w.name("wrong-pci")
	eni := w.enis[0].ID
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) {
		s.EnableDPDK, s.DPDKPCIAddress = true, primaryPCI
	}, w.attachment(0, v1alpha1.AttachmentAttached))
	w.start(o, nil)
	w.eventually("refused, the primary left alone", func() (bool, string) {
		e := w.entries(name)[eni]
		ok := e.State == v1alpha1.InterfaceFailed && strings.Contains(e.Message, "device of interface ens5") && !e.DPDKBound
		return ok && k.driverOf(primaryPCI) == "ena" && len(k.log()) == 0, fmt.Sprintf("entry %+v, primary's driver %q, sysfs writes %v", e, k.driverOf(primaryPCI), k.log())
	})
	if got := k.driverOf(testPCI); got != "ena" {
		t.Fatalf("the ENI's own device was bound to %q although the spec named another", got)
	}
}
