package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/utils/clock"
)

// pciAddressPattern is a full PCI address: domain:bus:device.function.
var pciAddressPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// errNoPCIDevice says an interface has no PCI device behind it (a virtual
// link), so it cannot be bound to a DPDK driver.
var errNoPCIDevice = errors.New("no PCI device behind the interface")

// SysFS reads and changes PCI driver bindings through sysfs under Root
// ("/sys" on a node; a fake tree in tests). Only these files are used:
// class/net/<if>/device, bus/pci/devices/<addr>/{driver,driver_override},
// bus/pci/drivers/<driver>/unbind and bus/pci/drivers_probe.
type SysFS struct {
	// Root is where sysfs is mounted.
	Root string
	// write writes one sysfs attribute; nil writes the file as the
	// kernel expects (tests put a fake kernel here).
	write func(path, value string) error
	// settle is how long a bind is waited for to show (default 2s), on
	// clock (nil: the real clock).
	settle time.Duration
	clock  clock.Clock
}

func (s SysFS) path(rel string) string { return filepath.Join(s.Root, rel) }

func (s SysFS) put(rel, value string) error {
	p := s.path(rel)
	if s.write != nil {
		return s.write(p, value)
	}
	// Never O_CREATE: a missing attribute is an error, not a file to make.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// pciDevice is the binding state of one PCI device.
type pciDevice struct {
	Address  string
	Exists   bool
	Driver   string // "" when no driver is bound
	Override string // driver_override; "" when unset
}

// PCIAddressOf returns the PCI address of a network interface, from
// class/net/<name>/device.
func (s SysFS) PCIAddressOf(ifname string) (string, error) {
	if ifname == "" || strings.ContainsAny(ifname, "/\x00") || ifname == "." || ifname == ".." {
		return "", fmt.Errorf("invalid interface name %q", ifname)
	}
	target, err := os.Readlink(s.path(filepath.Join("class/net", ifname, "device")))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", ifname, errNoPCIDevice)
	}
	if err != nil {
		return "", fmt.Errorf("reading the device of %s: %w", ifname, err)
	}
	addr := strings.ToLower(filepath.Base(target))
	if !pciAddressPattern.MatchString(addr) {
		return "", fmt.Errorf("%s: %w (its device is %s)", ifname, errNoPCIDevice, addr)
	}
	return addr, nil
}

// InterfacesOf returns the network interfaces whose device is the PCI
// device addr (class/net/<name>/device), sorted.
func (s SysFS) InterfacesOf(addr string) ([]string, error) {
	entries, err := os.ReadDir(s.path("class/net"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing network interfaces: %w", err)
	}
	var out []string
	for _, e := range entries {
		if a, err := s.PCIAddressOf(e.Name()); err == nil && a == addr {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// device reads the binding state of a PCI device.
func (s SysFS) device(addr string) (pciDevice, error) {
	d := pciDevice{Address: addr}
	if !pciAddressPattern.MatchString(addr) {
		return d, fmt.Errorf("invalid PCI address %q", addr)
	}
	dir := s.path(filepath.Join("bus/pci/devices", addr))
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return d, nil
	} else if err != nil {
		return d, fmt.Errorf("PCI device %s: %w", addr, err)
	}
	d.Exists = true
	target, err := os.Readlink(filepath.Join(dir, "driver"))
	switch {
	case err == nil:
		d.Driver = filepath.Base(target)
	case !errors.Is(err, os.ErrNotExist):
		return d, fmt.Errorf("reading the driver of %s: %w", addr, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "driver_override"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return d, fmt.Errorf("reading driver_override of %s: %w", addr, err)
	}
	if o := strings.TrimSpace(string(b)); o != "(null)" {
		d.Override = o
	}
	return d, nil
}

// driverLoaded tells whether the kernel has a PCI driver by that name.
func (s SysFS) driverLoaded(name string) bool {
	_, err := os.Stat(s.path(filepath.Join("bus/pci/drivers", name)))
	return err == nil
}

// sysfsWrite is one write of a value to a sysfs attribute (path relative
// to the root).
type sysfsWrite struct {
	Path  string
	Value string
}

// clearOverride is what driver_override takes to forget its driver.
const clearOverride = "\n"

// bindPlan lists the writes that bind dev to target: driver_override
// first, so no other driver can grab the device in between; then unbind
// from the current driver; then drivers_probe, which honours the override.
func bindPlan(dev pciDevice, target string) []sysfsWrite {
	var ws []sysfsWrite
	if dev.Override != target {
		ws = append(ws, sysfsWrite{filepath.Join("bus/pci/devices", dev.Address, "driver_override"), target})
	}
	if dev.Driver == target {
		return ws
	}
	if dev.Driver != "" {
		ws = append(ws, sysfsWrite{filepath.Join("bus/pci/drivers", dev.Driver, "unbind"), dev.Address})
	}
	return append(ws, sysfsWrite{"bus/pci/drivers_probe", dev.Address})
}

// restorePlan lists the writes that give dev, bound to the DPDK driver
// bound, back to its original driver ("" when it had none or it is not
// known: the kernel then picks the default driver): the override names
// the original driver during the probe, so the DPDK driver cannot take the
// device again, and is cleared afterwards so later probes are the
// kernel's own choice. A device still on bound leaves it even without an
// override (one taken over from dpdk-devbind has none).
func restorePlan(dev pciDevice, original, bound string) []sysfsWrite {
	override := filepath.Join("bus/pci/devices", dev.Address, "driver_override")
	onDPDK := bound != "" && bound != original && dev.Driver == bound
	if !onDPDK && dev.Override == "" && (dev.Driver == original || (original == "" && dev.Driver != "")) {
		return nil
	}
	if dev.Driver == original && original != "" {
		return []sysfsWrite{{override, clearOverride}}
	}
	var ws []sysfsWrite
	switch {
	case original != "":
		ws = append(ws, sysfsWrite{override, original})
	case dev.Override != "":
		ws = append(ws, sysfsWrite{override, clearOverride})
	}
	if dev.Driver != "" {
		ws = append(ws, sysfsWrite{filepath.Join("bus/pci/drivers", dev.Driver, "unbind"), dev.Address})
	}
	ws = append(ws, sysfsWrite{"bus/pci/drivers_probe", dev.Address})
	if original != "" {
		ws = append(ws, sysfsWrite{override, clearOverride})
	}
	return ws
}

func (s SysFS) run(ws []sysfsWrite) error {
	for _, w := range ws {
		if err := s.put(w.Path, w.Value); err != nil {
			return fmt.Errorf("writing %q to %s: %w", strings.TrimSpace(w.Value), s.path(w.Path), err)
		}
	}
	return nil
}

// waitDriver waits until the device is bound to want (or to any driver
// when want is ""), for drivers that probe asynchronously.
func (s SysFS) waitDriver(addr, want string) (pciDevice, error) {
	settle := s.settle
	if settle == 0 {
		settle = 2 * time.Second
	}
	clk := s.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	deadline := clk.Now().Add(settle)
	for {
		d, err := s.device(addr)
		if err != nil {
			return d, err
		}
		if (want == "" && d.Driver != "") || (want != "" && d.Driver == want) || clk.Now().After(deadline) {
			return d, nil
		}
		clk.Sleep(20 * time.Millisecond)
	}
}

// Bind binds the PCI device at addr to driver and returns the driver it
// had before ("" when none).
func (s SysFS) Bind(addr, driver string) (previous string, err error) {
	dev, err := s.device(addr)
	if err != nil {
		return "", err
	}
	if !dev.Exists {
		return "", fmt.Errorf("PCI device %s not found under %s", addr, s.path("bus/pci/devices"))
	}
	if dev.Driver == driver && dev.Override == driver {
		return driver, nil
	}
	if !s.driverLoaded(driver) {
		return dev.Driver, fmt.Errorf("driver %s is not loaded on the node (load its module, e.g. modprobe %s)", driver, driver)
	}
	if err := s.run(bindPlan(dev, driver)); err != nil {
		return dev.Driver, err
	}
	after, err := s.waitDriver(addr, driver)
	if err != nil {
		return dev.Driver, err
	}
	if after.Driver != driver {
		return dev.Driver, fmt.Errorf("PCI device %s is bound to %q after the probe, not %s (for vfio-pci on an instance without an IOMMU, the vfio module needs enable_unsafe_noiommu_mode=1)", addr, after.Driver, driver)
	}
	return dev.Driver, nil
}

// Restore gives the PCI device at addr, bound to the DPDK driver bound,
// back to original ("" lets the kernel choose). A device that is gone
// (the ENI was detached) needs nothing.
func (s SysFS) Restore(addr, original, bound string) error {
	dev, err := s.device(addr)
	if err != nil || !dev.Exists {
		return err
	}
	ws := restorePlan(dev, original, bound)
	if len(ws) == 0 {
		return nil
	}
	if err := s.run(ws); err != nil {
		return err
	}
	after, err := s.waitDriver(addr, original)
	if err != nil {
		return err
	}
	if original != "" && after.Driver != original {
		return fmt.Errorf("PCI device %s is bound to %q after the probe, not its original driver %s", addr, after.Driver, original)
	}
	return nil
}
