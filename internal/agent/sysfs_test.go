package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vishvananda/netlink"
)

// fakeKernel is a sysfs tree in a temporary directory with just enough
// of the kernel behind it: unbind removes the device's driver link,
// drivers_probe binds the device to its driver_override (or its default
// driver), bind binds it. Hooks let a test make an interface disappear
// and reappear with its driver, as a real netdev does.
type fakeKernel struct {
	t    *testing.T
	root string

	mu       sync.Mutex
	writes   []sysfsWrite          // relative path, value
	defaults map[string]string     // PCI address -> the driver the kernel picks
	onBind   func(pci, drv string) // after a driver took the device
	onUnbind func(pci, drv string) // after a driver let it go
}

func newFakeKernel(t *testing.T, drivers ...string) *fakeKernel {
	k := &fakeKernel{t: t, root: t.TempDir(), defaults: map[string]string{}}
	k.mkfile("bus/pci/drivers_probe", "")
	for _, d := range drivers {
		k.mkfile(filepath.Join("bus/pci/drivers", d, "bind"), "")
		k.mkfile(filepath.Join("bus/pci/drivers", d, "unbind"), "")
	}
	return k
}

func (k *fakeKernel) mkfile(rel, content string) {
	p := filepath.Join(k.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		k.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

func (k *fakeKernel) symlink(rel, target string) {
	p := filepath.Join(k.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		k.t.Fatal(err)
	}
	_ = os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		k.t.Fatal(err)
	}
}

// addDevice adds a PCI device bound to driver (the kernel's default for
// it) with a network interface ifname, laid out as on a node.
func (k *fakeKernel) addDevice(pci, driver, ifname string) {
	dev := filepath.Join("devices/pci0000:00", pci)
	k.mkfile(filepath.Join(dev, "driver_override"), "(null)\n")
	k.symlink(filepath.Join("bus/pci/devices", pci), filepath.Join("../../..", dev))
	k.symlink(filepath.Join(dev, "driver"), filepath.Join("../../../bus/pci/drivers", driver))
	if ifname != "" {
		k.symlink(filepath.Join("class/net", ifname, "device"), filepath.Join("../../..", dev))
	}
	k.mu.Lock()
	k.defaults[pci] = driver
	k.mu.Unlock()
}

func (k *fakeKernel) sysfs() SysFS { return SysFS{Root: k.root, write: k.write} }

func (k *fakeKernel) driverOf(pci string) string {
	t, err := os.Readlink(filepath.Join(k.root, "bus/pci/devices", pci, "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(t)
}

func (k *fakeKernel) overrideOf(pci string) string {
	b, _ := os.ReadFile(filepath.Join(k.root, "bus/pci/devices", pci, "driver_override"))
	return strings.TrimSpace(string(b))
}

func (k *fakeKernel) log() []sysfsWrite {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]sysfsWrite(nil), k.writes...)
}

func (k *fakeKernel) write(path, value string) error {
	rel, err := filepath.Rel(k.root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		k.t.Errorf("write outside the sysfs root: %s", path)
		return errors.New("outside the root")
	}
	k.mu.Lock()
	k.writes = append(k.writes, sysfsWrite{rel, value})
	k.mu.Unlock()
	v := strings.TrimSpace(value)
	parts := strings.Split(rel, "/")
	switch {
	case parts[len(parts)-1] == "driver_override":
		if _, err := os.Stat(path); err != nil {
			return err
		}
		if v == "" {
			v = "(null)"
		}
		return os.WriteFile(path, []byte(v+"\n"), 0o644)
	case len(parts) == 5 && parts[2] == "drivers" && parts[4] == "unbind":
		if k.driverOf(v) != parts[3] {
			return syscall.ENODEV
		}
		if err := os.Remove(filepath.Join(k.root, "bus/pci/devices", v, "driver")); err != nil {
			return err
		}
		if k.onUnbind != nil {
			k.onUnbind(v, parts[3])
		}
	case len(parts) == 5 && parts[2] == "drivers" && parts[4] == "bind":
		return k.bind(v, parts[3])
	case rel == "bus/pci/drivers_probe":
		if k.driverOf(v) != "" {
			return nil
		}
		drv := k.overrideOf(v)
		if drv == "(null)" || drv == "" {
			k.mu.Lock()
			drv = k.defaults[v]
			k.mu.Unlock()
		}
		if _, err := os.Stat(filepath.Join(k.root, "bus/pci/drivers", drv)); err != nil {
			return nil // no such driver: the device stays unbound, as on a node
		}
		return k.bind(v, drv)
	default:
		k.t.Errorf("unexpected sysfs write %q to %s", value, rel)
		return syscall.EACCES
	}
	return nil
}

func (k *fakeKernel) bind(pci, drv string) error {
	if k.driverOf(pci) != "" {
		return syscall.EBUSY
	}
	dev, err := os.Readlink(filepath.Join(k.root, "bus/pci/devices", pci))
	if err != nil {
		return syscall.ENODEV
	}
	k.symlink(filepath.Join("bus/pci/devices", dev, "driver"), filepath.Join("../../../bus/pci/drivers", drv))
	if k.onBind != nil {
		k.onBind(pci, drv)
	}
	return nil
}

const testPCI = "0000:00:06.0"

// ens6Kernel is the fake kernel of w's node (drivers ena and vfio-pci)
// with ENI 0's device, testPCI, bound to ena as interface ens6. As the
// kernel does, unbinding the device from ena takes the interface away
// (its link and its class/net entry) and binding it to ena brings both
// back. The callbacks run in the agent's goroutines: they use a netlink
// handle of their own and report with t.Error.
func ens6Kernel(w *world) *fakeKernel {
	k := newFakeKernel(w.t, "ena", "vfio-pci")
	k.addDevice(testPCI, "ena", "ens6")
	w.addLink("ens6", w.mac(0), 1500)
	kh, err := netlink.NewHandleAt(w.ns)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(kh.Close)
	iface := filepath.Join(k.root, "class/net/ens6")
	k.onUnbind = func(_, drv string) {
		if l, err := kh.LinkByName("ens6"); err == nil && drv == "ena" {
			_ = kh.LinkDel(l)
			if err := os.RemoveAll(iface); err != nil {
				w.t.Error(err)
			}
		}
	}
	k.onBind = func(_, drv string) {
		if drv != "ena" {
			return
		}
		if err := os.MkdirAll(iface, 0o755); err != nil {
			w.t.Error(err)
		}
		if err := os.Symlink(filepath.Join("../../../devices/pci0000:00", testPCI), filepath.Join(iface, "device")); err != nil {
			w.t.Error(err)
		}
		if err := addLinkWith(kh, "ens6", w.mac(0), 1500); err != nil {
			w.t.Error(err)
		}
	}
	return k
}

func TestSysFSBindAndRestore(t *testing.T) {
	k := newFakeKernel(t, "ena", "vfio-pci")
	k.addDevice(testPCI, "ena", "ens6")
	s := k.sysfs()

	addr, err := s.PCIAddressOf("ens6")
	if err != nil || addr != testPCI {
		t.Fatalf("PCIAddressOf(ens6) = %q, %v", addr, err)
	}
	if _, err := s.PCIAddressOf("dummy0"); !errors.Is(err, errNoPCIDevice) {
		t.Fatalf("a virtual interface has a PCI device? %v", err)
	}

	prev, err := s.Bind(testPCI, "vfio-pci")
	if err != nil || prev != "ena" {
		t.Fatalf("Bind = %q, %v", prev, err)
	}
	if d, o := k.driverOf(testPCI), k.overrideOf(testPCI); d != "vfio-pci" || o != "vfio-pci" {
		t.Fatalf("after Bind: driver %q, override %q", d, o)
	}
	want := []sysfsWrite{
		{"bus/pci/devices/" + testPCI + "/driver_override", "vfio-pci"},
		{"bus/pci/drivers/ena/unbind", testPCI},
		{"bus/pci/drivers_probe", testPCI},
	}
	if got := k.log(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes %+v; want %+v", got, want)
	}
	// Idempotent: a second Bind writes nothing.
	if _, err := s.Bind(testPCI, "vfio-pci"); err != nil || len(k.log()) != 3 {
		t.Fatalf("second Bind: %v, %d writes", err, len(k.log()))
	}

	if err := s.Restore(testPCI, "ena", "vfio-pci"); err != nil {
		t.Fatal(err)
	}
	if d, o := k.driverOf(testPCI), k.overrideOf(testPCI); d != "ena" || o != "(null)" {
		t.Fatalf("after Restore: driver %q, override %q", d, o)
	}
	if err := s.Restore(testPCI, "ena", "vfio-pci"); err != nil || len(k.log()) != 7 {
		t.Fatalf("second Restore: %v, %d writes (want none more)", err, len(k.log()))
	}

	// Unknown original driver: the kernel picks its default.
	if _, err := s.Bind(testPCI, "vfio-pci"); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(testPCI, "", "vfio-pci"); err != nil {
		t.Fatal(err)
	}
	if d := k.driverOf(testPCI); d != "ena" {
		t.Fatalf("kernel's choice after Restore: %q", d)
	}
}

func TestSysFSRefusals(t *testing.T) {
	k := newFakeKernel(t, "ena")
	k.addDevice(testPCI, "ena", "ens6")
	s := k.sysfs()
	s.clock = clocktesting.NewFakeClock(time.Unix(1000, 0)) // a bind's wait steps it, not the wall clock
	if _, err := s.Bind(testPCI, "vfio-pci"); err == nil || !strings.Contains(err.Error(), "modprobe vfio-pci") {
		t.Fatalf("binding to a driver that is not loaded: %v", err)
	}
	if k.driverOf(testPCI) != "ena" || len(k.log()) != 0 {
		t.Fatal("the device was touched although the driver is missing")
	}
	if _, err := s.Bind("0000:00:07.0", "ena"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("binding a missing device: %v", err)
	}
	if err := s.Restore("0000:00:07.0", "ena", "vfio-pci"); err != nil {
		t.Fatalf("restoring a device that is gone (ENI detached) must be a no-op: %v", err)
	}
	if _, err := s.Bind("../../etc", "ena"); err == nil {
		t.Fatal("a path as PCI address was accepted")
	}
	if _, err := s.PCIAddressOf("../x"); err == nil {
		t.Fatal("a path as interface name was accepted")
	}
}
