package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// resourceList decodes a config's resourceList for comparisons.
func resourceList(t *testing.T, cfg []byte) []map[string]any {
	t.Helper()
	var c struct {
		ResourceList []map[string]any `json:"resourceList"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, cfg)
	}
	return c.ResourceList
}

func TestMergeSRIOV(t *testing.T) {
	dpdk := sriovResource{Name: "intel.com/sriov_dpdk", PCIAddresses: []string{"0000:00:06.0", "0000:00:07.0"}, Drivers: []string{"vfio-pci"}}
	mineJSON := `{"resourceName":"sriov_dpdk","resourcePrefix":"intel.com","selectors":{"pciAddresses":["0000:00:06.0","0000:00:07.0"],"drivers":["vfio-pci"]}}`
	foreign := `{"resourceName":"intel_sriov_netdevice","selectors":{"vendors":["8086"],"drivers":["iavf"]}}`
	cases := []struct {
		name        string
		existing    string
		owned       []string
		want        []sriovResource
		wantNames   []string // resourceName of each entry, in order
		wantOwned   []string
		changed     bool
		conflict    string
		wantErr     string
		periodicKey bool
	}{
		{name: "no file, nothing wanted", wantNames: nil, changed: false},
		{name: "no file: created", want: []sriovResource{dpdk}, wantNames: []string{"sriov_dpdk"}, wantOwned: []string{"intel.com/sriov_dpdk"}, changed: true},
		{name: "others' entries and fields are kept", existing: `{"periodicUpdateInterval": 30, "resourceList":[` + foreign + `]}`,
			want: []sriovResource{dpdk}, wantNames: []string{"intel_sriov_netdevice", "sriov_dpdk"}, wantOwned: []string{"intel.com/sriov_dpdk"}, changed: true, periodicKey: true},
		{name: "steady state", existing: `{"resourceList":[` + foreign + `,` + mineJSON + `]}`, owned: []string{"intel.com/sriov_dpdk"},
			want: []sriovResource{dpdk}, wantNames: []string{"intel_sriov_netdevice", "sriov_dpdk"}, wantOwned: []string{"intel.com/sriov_dpdk"}, changed: false},
		{name: "a device more", existing: `{"resourceList":[` + mineJSON + `]}`, owned: []string{"intel.com/sriov_dpdk"},
			want:      []sriovResource{{Name: "intel.com/sriov_dpdk", PCIAddresses: []string{"0000:00:06.0", "0000:00:07.0", "0000:00:08.0"}, Drivers: []string{"vfio-pci"}}},
			wantNames: []string{"sriov_dpdk"}, wantOwned: []string{"intel.com/sriov_dpdk"}, changed: true},
		{name: "entries of deleted NodeENIs are removed", existing: `{"resourceList":[` + mineJSON + `,` + foreign + `]}`, owned: []string{"intel.com/sriov_dpdk"},
			wantNames: []string{"intel_sriov_netdevice"}, changed: true},
		{name: "someone else's resource of that name is not overwritten", existing: `{"resourceList":[{"resourceName":"sriov_dpdk","resourcePrefix":"intel.com","selectors":{"vendors":["1d0f"]}}]}`,
			want: []sriovResource{dpdk}, wantNames: []string{"sriov_dpdk"}, changed: false, conflict: "intel.com/sriov_dpdk"},
		{name: "a bare name may be the same resource", existing: `{"resourceList":[{"resourceName":"sriov_dpdk","selectors":{"vendors":["1d0f"]}}]}`,
			want: []sriovResource{dpdk}, wantNames: []string{"sriov_dpdk"}, changed: false, conflict: "intel.com/sriov_dpdk"},
		{name: "the agent's own entry is adopted after the state was lost", existing: `{"resourceList":[` + mineJSON + `]}`,
			want: []sriovResource{dpdk}, wantNames: []string{"sriov_dpdk"}, wantOwned: []string{"intel.com/sriov_dpdk"}, changed: false},
		{name: "not JSON: left alone", existing: `{"resourceList": [`, want: []sriovResource{dpdk}, wantErr: "leaving it alone"},
		{name: "resourceList not a list: left alone", existing: `{"resourceList": {}}`, want: []sriovResource{dpdk}, wantErr: "not a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := mergeSRIOV([]byte(c.existing), c.owned, c.want)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v; want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range resourceList(t, m.Config) {
				names = append(names, e["resourceName"].(string))
			}
			if !reflect.DeepEqual(names, c.wantNames) || !reflect.DeepEqual(m.Owned, c.wantOwned) || m.Changed != c.changed {
				t.Fatalf("entries %v owned %v changed %v; want %v %v %v\n%s", names, m.Owned, m.Changed, c.wantNames, c.wantOwned, c.changed, m.Config)
			}
			if (c.conflict != "") != (len(m.Conflicts) > 0) || (c.conflict != "" && m.Conflicts[c.conflict] == "") {
				t.Fatalf("conflicts %v; want %q", m.Conflicts, c.conflict)
			}
			if c.periodicKey && !strings.Contains(string(m.Config), `"periodicUpdateInterval": 30`) {
				t.Fatalf("a top-level field was lost:\n%s", m.Config)
			}
			if c.conflict != "" && !strings.Contains(string(m.Config), "1d0f") {
				t.Fatalf("someone else's entry was changed:\n%s", m.Config)
			}
		})
	}
}

// The entry the agent writes is what the device plugin reads: prefix,
// name, and PCI address and driver selectors.
func TestSRIOVEntryShape(t *testing.T) {
	m, err := mergeSRIOV(nil, nil, []sriovResource{{Name: "intel.com/sriov_dpdk", PCIAddresses: []string{"0000:00:06.0"}, Drivers: []string{"vfio-pci"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"resourceName": "sriov_dpdk", "resourcePrefix": "intel.com",
		"selectors": map[string]any{"pciAddresses": []any{"0000:00:06.0"}, "drivers": []any{"vfio-pci"}}}}
	if got := resourceList(t, m.Config); !reflect.DeepEqual(got, want) {
		t.Fatalf("entry %v; want %v", got, want)
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "config.json")
	if err := writeAtomic(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(filepath.Dir(p))
	if string(b) != "two" || len(entries) != 1 {
		t.Fatalf("content %q, %d files in the directory (temporary files left?)", b, len(entries))
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestReloadTouch(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sriov-reload")
	cfg := []byte(`{"resourceList":[]}`)
	if err := (Reload{Mode: ReloadTouch, Path: p}).Do(cfg); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cfg)
	if b, _ := os.ReadFile(p); string(b) != hex.EncodeToString(sum[:])+"\n" {
		t.Fatalf("stamp %q", b)
	}
	if err := (Reload{Mode: ReloadNone}).Do(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestReloadSignal(t *testing.T) {
	// A test run under nohup ignores SIGHUP, and a child inherits an
	// ignored signal: while this process handles it, the child starts
	// with the default action instead.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	pidfile := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(pidfile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (Reload{Mode: ReloadSignal, Path: pidfile}).Do(nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
			t.Fatalf("plugin stand-in ended with %v; want SIGHUP", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no SIGHUP arrived")
	}
	// A plugin that is not running reads the new file when it starts.
	if err := (Reload{Mode: ReloadSignal, Path: pidfile}).Do(nil); err != nil {
		t.Fatalf("signalling a process that is gone: %v", err)
	}
	_ = os.WriteFile(pidfile, []byte("1"), 0o644)
	if err := (Reload{Mode: ReloadSignal, Path: pidfile}).Do(nil); err == nil {
		t.Fatal("PID 1 was accepted")
	}
}

// writeAtomicIf leaves a file that changed since it was read alone, and
// leaves no temporary file behind.
func TestWriteAtomicIfUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := writeAtomicIf(p, []byte("a"), 0o644, func() []byte { return []byte{} }); !errors.Is(err, errConfigChanged) {
		t.Fatalf("no file, but an empty one expected: %v", err)
	}
	if err := writeAtomicIf(p, []byte("a"), 0o644, func() []byte { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomicIf(p, []byte("b"), 0o644, func() []byte { return []byte("x") }); !errors.Is(err, errConfigChanged) {
		t.Fatalf("changed since read: %v", err)
	}
	if err := writeAtomicIf(p, []byte("b"), 0o644, func() []byte { return []byte("a") }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "b" {
		t.Fatalf("content %q", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("left behind: %v", es)
	}
}
