package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// bindSteps are the sysfs writes of a bind from ena: driver_override,
// unbind, drivers_probe (TestSysFSBindAndRestore).
const bindSteps = 3

// restoreSteps are the sysfs writes giving a device on vfio-pci back to
// ena: driver_override, unbind, drivers_probe, driver_override cleared.
const restoreSteps = 4

// errKilled is what a write returns once the simulated agent is dead:
// the write and every later one never reach the host.
var errKilled = errors.New("agent killed")

// killSwitch lets the first `after` writes of an agent through and fails
// every later one, as if the process died right after its after-th write.
type killSwitch struct {
	mu       sync.Mutex
	after    int
	done     int
	attempts int
}

// pass counts one write attempt and tells whether it reaches the host.
func (s *killSwitch) pass() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.done >= s.after {
		return false
	}
	s.done++
	return true
}

// dead tells whether the agent tried a write past its death.
func (s *killSwitch) dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts > s.after
}

// The agent is killed after each step k of the DPDK bind (driver_override
// set; unbound from ena; probed) and, past the last step, after the bind
// but before the SR-IOV config was written. A fresh agent then converges
// whether DPDK is still wanted (bound to vfio-pci, published) or no longer
// (back on ena with its interface configured, unpublished). Everything is
// read from the fake sysfs tree, the namespace's links and the files,
// never from the agent's report alone; no device is ever left unbound.
func TestDPDKBindKilledAtEveryStep(t *testing.T) {
	for k := 0; k <= bindSteps; k++ {
		for _, still := range []bool{true, false} {
			dpdkKilledAfter(t, k, still)
		}
	}
}

// dpdkCase is one node of the DPDK crash tests: ENI 0's device on the
// fake kernel of ens6Kernel, someone else's entry in the device plugin
// config (before), and a NodeENI asking for DPDK.
type dpdkCase struct {
	w             *world
	kern          *fakeKernel
	cfgPath, name string
	eni           string
	before        []byte
}

func newDPDKCase(t *testing.T, suffix string) *dpdkCase {
	t.Helper()
	w := newWorld(t, suffix, 1)
	before := `{"resourceList":[{"resourceName":"other","selectors":{"drivers":["iavf"]}}]}`
	c := &dpdkCase{w: w, kern: ens6Kernel(w), cfgPath: w.sriovConfig(before), name: w.name(suffix), eni: w.enis[0].ID, before: []byte(before)}
	w.createNodeENI(c.name, func(s *v1alpha1.NodeENISpec) {
		s.MTU, s.EnableDPDK, s.DPDKResourceName = 9001, true, "intel.com/dpdk"
	}, w.attachment(0, v1alpha1.AttachmentAttached))
	return c
}

// options are the agent's, its sysfs writes going through kill (nil: all
// of them reach the fake kernel).
func (c *dpdkCase) options(kill *killSwitch) Options {
	o := c.w.options()
	o.SysfsRoot, o.SRIOVConfig, o.sysfsWrite = c.kern.root, c.cfgPath, c.kern.write
	if kill != nil {
		o.sysfsWrite = func(p, v string) error {
			if !kill.pass() {
				return errKilled
			}
			return c.kern.write(p, v)
		}
	}
	return o
}

// killedAfter runs an agent until it dies at kill, and checks that
// exactly writes sysfs writes reached the kernel in all.
func (c *dpdkCase) killedAfter(kill *killSwitch, writes int) {
	a := c.w.start(c.options(kill), nil)
	c.w.eventually(fmt.Sprintf("killed after %d writes", kill.after), func() (bool, string) {
		return kill.dead(), fmt.Sprintf("sysfs writes %v", c.kern.log())
	})
	_ = a.Stop()
	if got := len(c.kern.log()); got != writes {
		c.w.t.Fatalf("%d sysfs writes reached the kernel, want %d: %v", got, writes, c.kern.log())
	}
}

// converges runs a fresh agent until the host is as the NodeENI asks.
func (c *dpdkCase) converges(what string, still bool) {
	a := c.w.start(c.options(nil), nil)
	defer func() { _ = a.Stop() }()
	c.w.eventually(what+": converged", func() (bool, string) {
		return dpdkConverged(c.w, c.kern, c.cfgPath, c.name, c.eni, still)
	})
}

func dpdkKilledAfter(t *testing.T, k int, still bool) {
	t.Helper()
	c := newDPDKCase(t, fmt.Sprintf("k%d-%v", k, still))
	if k < bindSteps {
		c.killedAfter(&killSwitch{after: k}, k)
	} else {
		// Killed after the bind, before the config was written: the
		// state file says the resource is the agent's, the file does not
		// have it yet.
		c.converges("first agent", true)
		if err := os.WriteFile(c.cfgPath, c.before, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !still {
		c.w.updateSpec(c.name, func(s *v1alpha1.NodeENISpec) { s.EnableDPDK = false })
	}
	c.converges(fmt.Sprintf("k=%d, DPDK wanted %v", k, still), still)
}

// DPDK is switched off and the agent is killed after each step of giving
// the device back to ena (driver_override set to ena, unbound from
// vfio-pci, probed; the override cleared is the last step): a fresh agent
// finishes it — on ena with its interface configured, the override
// cleared, unpublished — and no device is left unbound.
func TestDPDKRestoreKilledAtEveryStep(t *testing.T) {
	for k := 0; k < restoreSteps; k++ {
		c := newDPDKCase(t, fmt.Sprintf("u%d", k))
		c.converges("bound", true)
		c.w.updateSpec(c.name, func(s *v1alpha1.NodeENISpec) { s.EnableDPDK = false })
		c.killedAfter(&killSwitch{after: k}, bindSteps+k)
		c.converges(fmt.Sprintf("k=%d", k), false)
	}
}

// dpdkConverged checks the host from sysfs, the links and the files: the
// device bound as wanted and never unbound, its interface there exactly
// when it is on ena, the config publishing it exactly when it is bound to
// vfio-pci, someone else's entry kept, and the state file recording the
// original driver while the device is bound.
func dpdkConverged(w *world, kern *fakeKernel, cfgPath, name, eni string, still bool) (bool, string) {
	drv, over := kern.driverOf(testPCI), kern.overrideOf(testPCI)
	l, linkThere := w.linkByMAC(w.mac(0))
	cfg, _ := os.ReadFile(cfgPath)
	state, _ := os.ReadFile(filepath.Join(w.dir, "state.json"))
	rl := resourceList(w.t, cfg)
	e := w.entries(name)[eni]
	seen := fmt.Sprintf("driver %q override %q, link %+v (there %v), config %s, state %s, entry %+v", drv, over, l, linkThere, cfg, state, e)
	if len(rl) == 0 || rl[0]["resourceName"] != "other" {
		return false, "someone else's entry lost: " + seen
	}
	if still {
		published := len(rl) == 2 && rl[1]["resourcePrefix"] == "intel.com" &&
			reflect.DeepEqual(rl[1]["selectors"], map[string]any{"pciAddresses": []any{testPCI}, "drivers": []any{"vfio-pci"}})
		return drv == "vfio-pci" && over == "vfio-pci" && !linkThere && published &&
			strings.Contains(string(state), `"originalDriver": "ena"`) && e.DPDKBound, seen
	}
	return drv == "ena" && over == "(null)" && linkThere && l.Name == "ens6" && l.MTU == 9001 && l.Up &&
		len(rl) == 1 && e.State == v1alpha1.InterfaceConfigured && !e.DPDKBound, seen
}

// countingNetlink passes the agent's netlink calls to the namespace's
// handle and records every write that reached it as "op arg", so a test
// can assert exactly what the agent changed (nothing, for a host already
// as wanted). With a kill switch, writes fail once it trips.
type countingNetlink struct {
	netlinkOps
	kill *killSwitch

	mu     sync.Mutex
	writes []string
}

func (n *countingNetlink) do(op string, arg any, f func() error) error {
	if n.kill != nil && !n.kill.pass() {
		return errKilled
	}
	err := f()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.writes = append(n.writes, strings.TrimSpace(fmt.Sprintf("%s %v", op, arg)))
	return err
}

func (n *countingNetlink) log() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.writes...)
}

func (n *countingNetlink) LinkSetDown(l netlink.Link) error {
	return n.do("down", "", func() error { return n.netlinkOps.LinkSetDown(l) })
}

func (n *countingNetlink) LinkSetName(l netlink.Link, name string) error {
	return n.do("rename", name, func() error { return n.netlinkOps.LinkSetName(l, name) })
}

func (n *countingNetlink) LinkSetUp(l netlink.Link) error {
	return n.do("up", "", func() error { return n.netlinkOps.LinkSetUp(l) })
}

func (n *countingNetlink) LinkSetMTU(l netlink.Link, mtu int) error {
	return n.do("mtu", mtu, func() error { return n.netlinkOps.LinkSetMTU(l, mtu) })
}

// The agent is killed after each netlink write of configuring a new
// interface (eth1, down, MTU 1500 → multus, up, MTU 9001): set down,
// renamed, set up, MTU. A fresh agent makes exactly the writes still
// missing, read from the link as the kernel shows it; no link is left
// under its old name or down.
func TestRenameKilledAtEveryStep(t *testing.T) {
	rest := [][]string{
		{"down", "rename multus", "up", "mtu 9001"},
		{"down", "rename multus", "up", "mtu 9001"}, // down already: the rename sets it down again
		{"mtu 9001", "up"},                          // renamed but down
		{"mtu 9001"},                                // renamed and up
		nil,                                         // all done
	}
	for k, want := range rest {
		w := newWorld(t, fmt.Sprintf("r%d", k), 1)
		w.addLink("eth1", w.mac(0), 1500)
		name := w.name(fmt.Sprintf("r%d", k))
		eni := w.enis[0].ID
		w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "multus" }, w.attachment(0, v1alpha1.AttachmentAttached))
		kill := &killSwitch{after: k}
		o := w.options()
		o.netlink = &countingNetlink{netlinkOps: w.nl, kill: kill}
		a := w.start(o, nil)
		w.eventually(fmt.Sprintf("k=%d: the agent got as far as it may", k), func() (bool, string) {
			if k < len(rest)-1 {
				return kill.dead(), ""
			}
			l, _ := w.linkByMAC(w.mac(0))
			return l.Name == "multus" && l.MTU == 9001 && l.Up, fmt.Sprintf("%+v", l)
		})
		_ = a.Stop()

		nl := &countingNetlink{netlinkOps: w.nl}
		o.netlink = nl
		a = w.start(o, nil)
		w.eventually(fmt.Sprintf("k=%d: converged", k), func() (bool, string) {
			l, ok := w.linkByMAC(w.mac(0))
			_, old := w.linkByName("eth1")
			e := w.entries(name)[eni]
			return ok && !old && l.Name == "multus" && l.MTU == 9001 && l.Up && e.State == v1alpha1.InterfaceConfigured,
				fmt.Sprintf("link %+v, eth1 still there %v", l, old)
		})
		time.Sleep(300 * time.Millisecond) // later passes must write nothing more
		_ = a.Stop()
		if got := nl.log(); !reflect.DeepEqual(got, want) {
			t.Fatalf("k=%d: the fresh agent wrote %q; want %q", k, got, want)
		}
	}
}

// Someone else sets the agent's link down and its MTU back, while the
// agent runs and while it is down: the agent brings it back with exactly
// the two writes needed (MTU, up) — no rename, no extra down/up.
func TestLinkFlapsAreRepaired(t *testing.T) {
	w := newWorld(t, "n", 1)
	w.addLink("eth1", w.mac(0), 1500)
	name := w.name("flap")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "multus" }, w.attachment(0, v1alpha1.AttachmentAttached))
	configured := func() (bool, string) {
		l, ok := w.linkByMAC(w.mac(0))
		return ok && l.Name == "multus" && l.MTU == 9001 && l.Up, fmt.Sprintf("%+v", l)
	}
	flap := func() {
		l, err := w.nl.LinkByName("multus")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.nl.LinkSetDown(l); err != nil {
			t.Fatal(err)
		}
		if err := w.nl.LinkSetMTU(l, 1500); err != nil {
			t.Fatal(err)
		}
	}
	o := w.options()
	nl := &countingNetlink{netlinkOps: w.nl}
	o.netlink = nl
	a := w.start(o, nil)
	w.eventually("configured", configured)
	time.Sleep(300 * time.Millisecond)
	for _, when := range []string{"while running", "while down"} {
		n := len(nl.log())
		if when == "while down" {
			_ = a.Stop()
			flap()
			a = w.start(o, nil)
		} else {
			flap()
		}
		w.eventually(when+": repaired", configured)
		time.Sleep(300 * time.Millisecond) // later passes must write nothing more
		if got, want := nl.log()[n:], []string{"mtu 9001", "up"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: writes %q; want %q", when, got, want)
		}
	}
	_ = a.Stop()
}

// Someone else edits the SR-IOV device plugin config between the agent's
// read and its write: on the first write it changes its own entry, on
// the second it adds one. Both edits survive the agent's writes (its merge
// is redone from the new content), and the agent's entry is published.
func TestSRIOVConfigEditedConcurrently(t *testing.T) {
	w := newWorld(t, "n", 1)
	kern := ens6Kernel(w)
	other := func(name, driver string) string {
		return `{"resourceName":"` + name + `","selectors":{"drivers":["` + driver + `"]}}`
	}
	cfgPath := w.sriovConfig(`{"resourceList":[` + other("other", "iavf") + `]}`)
	edits := []string{
		`{"resourceList":[` + other("other", "mlx5_core") + `]}`,
		`{"resourceList":[` + other("other", "mlx5_core") + `,` + other("late", "iavf") + `]}`,
	}
	var mu sync.Mutex
	races := 0
	o := w.options()
	o.SysfsRoot, o.sysfsWrite, o.SRIOVConfig = kern.root, kern.write, cfgPath
	o.sriovRace = func() {
		mu.Lock()
		defer mu.Unlock()
		if races < len(edits) {
			// Written in place, as an editor or a tool without a temporary file would.
			if err := os.WriteFile(cfgPath, []byte(edits[races]), 0o644); err != nil {
				t.Error(err)
			}
		}
		races++
	}
	name := w.name("race")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) {
		s.EnableDPDK, s.DPDKResourceName = true, "intel.com/dpdk"
	}, w.attachment(0, v1alpha1.AttachmentAttached))
	a := w.start(o, nil)
	defer func() { _ = a.Stop() }()
	w.eventually("published next to both edits", func() (bool, string) {
		b, _ := os.ReadFile(cfgPath)
		if !json.Valid(b) {
			return false, "read while an edit in place was half written" // the race hook's own writes
		}
		rl := resourceList(t, b)
		mu.Lock()
		n := races
		mu.Unlock()
		byName := map[string]map[string]any{}
		for _, e := range rl {
			byName[fmt.Sprint(e["resourceName"])] = e
		}
		ok := len(rl) == 3 && n == len(edits)+1 && byName["dpdk"] != nil && byName["late"] != nil &&
			reflect.DeepEqual(byName["other"]["selectors"], map[string]any{"drivers": []any{"mlx5_core"}})
		return ok, fmt.Sprintf("%d edits raced; config %s", n, b)
	})
}
