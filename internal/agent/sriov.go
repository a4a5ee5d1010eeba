package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// sriovResource is one resource the agent publishes through the SR-IOV
// network device plugin: the PCI devices of this node's interfaces whose
// NodeENIs name the resource.
type sriovResource struct {
	Name         string   // prefix/name, as in the NodeENI's dpdkResourceName
	PCIAddresses []string // sorted
	Drivers      []string // sorted; the drivers the devices are bound to
}

// sriovEntry is a resourceList entry as the agent writes it. selectors is
// the object form, which every version of the plugin reads.
type sriovEntry struct {
	ResourceName   string         `json:"resourceName"`
	ResourcePrefix string         `json:"resourcePrefix,omitempty"`
	Selectors      sriovSelectors `json:"selectors"`
}

type sriovSelectors struct {
	PCIAddresses []string `json:"pciAddresses"`
	Drivers      []string `json:"drivers,omitempty"`
}

func entryOf(r sriovResource) sriovEntry {
	e := sriovEntry{ResourceName: r.Name, Selectors: sriovSelectors{PCIAddresses: r.PCIAddresses, Drivers: r.Drivers}}
	if i := strings.LastIndex(r.Name, "/"); i >= 0 {
		e.ResourcePrefix, e.ResourceName = r.Name[:i], r.Name[i+1:]
	}
	return e
}

// entryKey names the resource of a config entry. An entry without its own
// prefix gets the plugin's --resource-prefix, which the agent does not
// know: its key is the bare name, and it is compared by name alone.
func entryKey(raw json.RawMessage) (key, name string, err error) {
	var e struct {
		ResourceName   string `json:"resourceName"`
		ResourcePrefix string `json:"resourcePrefix"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return "", "", err
	}
	if e.ResourcePrefix == "" {
		return e.ResourceName, e.ResourceName, nil
	}
	return e.ResourcePrefix + "/" + e.ResourceName, e.ResourceName, nil
}

func bareName(full string) string {
	if i := strings.LastIndex(full, "/"); i >= 0 {
		return full[i+1:]
	}
	return full
}

// sriovMerge is the result of merging the agent's resources into a
// device plugin config.
type sriovMerge struct {
	Config    []byte            // the new file content
	Changed   bool              // whether it differs from the old one in what the agent manages
	Owned     []string          // the resources the agent's entries now publish, sorted
	Conflicts map[string]string // resource -> why the agent cannot publish it
}

// mergeSRIOV merges the agent's resources into the plugin's config.json
// (existing: its content, nil or empty when there is none). Entries the
// agent owned (owned) and no longer wants are removed; entries of others
// are kept as they are and never overwritten — a resource someone else
// already defines is reported as a conflict instead. An entry exactly as
// the agent would write it is adopted (the node's state was lost).
func mergeSRIOV(existing []byte, owned []string, want []sriovResource) (sriovMerge, error) {
	top, list, err := parseSRIOVConfig(existing)
	if err != nil {
		return sriovMerge{}, err
	}
	m := newSRIOVMerger(owned, want)
	for i, raw := range list {
		if err := m.existing(i, raw); err != nil {
			return sriovMerge{}, err
		}
	}
	m.addMissing()
	return m.finish(top)
}

// parseSRIOVConfig reads the plugin's config.json as a JSON object and
// its resourceList.
func parseSRIOVConfig(existing []byte) (top map[string]json.RawMessage, list []json.RawMessage, err error) {
	top = map[string]json.RawMessage{}
	if len(bytes.TrimSpace(existing)) > 0 {
		if err := json.Unmarshal(existing, &top); err != nil {
			return nil, nil, fmt.Errorf("the device plugin config is not a JSON object, leaving it alone: %w", err)
		}
	}
	if raw, ok := top["resourceList"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, nil, fmt.Errorf("resourceList of the device plugin config is not a list, leaving it alone: %w", err)
		}
	}
	return top, list, nil
}

// sriovMerger is one merge of mergeSRIOV in progress.
type sriovMerger struct {
	mine   map[string]bool       // resources whose entries are the agent's
	wanted map[string]sriovEntry // resource -> the entry the agent wants
	placed map[string]bool       // resources whose entry is in out
	out    []json.RawMessage     // the new resourceList
	res    sriovMerge
}

func newSRIOVMerger(owned []string, want []sriovResource) *sriovMerger {
	m := &sriovMerger{mine: map[string]bool{}, wanted: map[string]sriovEntry{}, placed: map[string]bool{},
		res: sriovMerge{Conflicts: map[string]string{}}}
	for _, o := range owned {
		m.mine[o] = true
	}
	for _, r := range want {
		m.wanted[r.Name] = entryOf(r)
	}
	return m
}

// existing takes resourceList[i] of the existing config: an entry of the
// agent's is rewritten as wanted or dropped when no longer wanted;
// someone else's is kept as it is.
func (m *sriovMerger) existing(i int, raw json.RawMessage) error {
	key, name, err := entryKey(raw)
	if err != nil {
		return fmt.Errorf("resourceList[%d] of the device plugin config: %w", i, err)
	}
	if m.mine[key] {
		e, ok := m.wanted[key]
		if !ok || m.placed[key] {
			m.res.Changed = true // released: the NodeENI or its interface is gone
			return nil
		}
		m.placed[key] = true
		if sameResource(raw, e) {
			// Kept as it is, in whatever form it was written: rewriting
			// an entry that selects the same devices would only restart the
			// plugin.
			m.out = append(m.out, raw)
			return nil
		}
		b, _ := json.Marshal(e)
		m.res.Changed = true
		m.out = append(m.out, b)
		return nil
	}
	// Someone else's entry. One that publishes a resource the agent
	// wants blocks it, unless it is exactly the agent's own.
	for full, e := range m.wanted {
		if m.placed[full] || (key != full && (key != name || name != bareName(full))) {
			continue
		}
		if sameResource(raw, e) {
			m.placed[full] = true
			m.mine[full] = true
		} else {
			m.res.Conflicts[full] = fmt.Sprintf("resource %s is already defined in the device plugin config by someone else (resourceList[%d]); the agent does not overwrite it", full, i)
		}
	}
	m.out = append(m.out, raw)
	return nil
}

// addMissing appends, sorted, the wanted entries not in the config yet
// and not blocked by someone else's.
func (m *sriovMerger) addMissing() {
	var add []string
	for full := range m.wanted {
		if !m.placed[full] && m.res.Conflicts[full] == "" {
			add = append(add, full)
		}
	}
	slices.Sort(add)
	for _, full := range add {
		b, _ := json.Marshal(m.wanted[full])
		m.out = append(m.out, b)
		m.placed[full] = true
		m.res.Changed = true
	}
}

// finish puts the new resourceList into top and encodes the config.
func (m *sriovMerger) finish(top map[string]json.RawMessage) (sriovMerge, error) {
	res := m.res
	res.Owned = slices.Sorted(maps.Keys(m.placed))
	out := m.out
	if out == nil {
		out = []json.RawMessage{}
	}
	listJSON, err := json.Marshal(out)
	if err != nil {
		return sriovMerge{}, err
	}
	top["resourceList"] = listJSON
	cfg, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return sriovMerge{}, err
	}
	res.Config = append(cfg, '\n')
	return res, nil
}

// sameResource tells whether the config entry raw selects exactly what
// the agent's entry e does: the same resource, one selector of the same
// PCI addresses and drivers (in any order), nothing else. Such an entry
// is the agent's own, or the one the ENI Manager wrote for the same
// device (it writes selectors as a list of one), and is adopted as it is
// on takeover, with no write and no device plugin restart.
func sameResource(raw json.RawMessage, e sriovEntry) bool {
	var got struct {
		ResourceName   string          `json:"resourceName"`
		ResourcePrefix string          `json:"resourcePrefix"`
		DeviceType     string          `json:"deviceType"`
		Selectors      json.RawMessage `json:"selectors"`
	}
	if err := strictUnmarshal(raw, &got); err != nil {
		return false
	}
	if got.ResourceName != e.ResourceName || got.ResourcePrefix != e.ResourcePrefix ||
		(got.DeviceType != "" && got.DeviceType != "netDevice") {
		return false
	}
	var sel sriovSelectors
	if err := strictUnmarshal(got.Selectors, &sel); err != nil {
		var list []sriovSelectors
		if err := strictUnmarshal(got.Selectors, &list); err != nil || len(list) != 1 {
			return false
		}
		sel = list[0]
	}
	return sameSet(sel.PCIAddresses, e.Selectors.PCIAddresses) && sameSet(sel.Drivers, e.Selectors.Drivers)
}

// strictUnmarshal decodes JSON refusing fields v does not have: an entry
// with more selectors than the agent writes selects something else.
func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// errConfigChanged says the file changed between the agent's read and
// its write: someone else wrote it meanwhile.
var errConfigChanged = errors.New("changed by someone else since it was read")

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, then renamed over it, so a reader (the device plugin
// starting) sees the old file or the new one, never a part.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomicIf(path, data, perm, nil)
}

// writeAtomicIf is writeAtomic, but when unchanged is not nil, the file
// is read again right before the rename and, when it no longer holds
// what unchanged returns (nil: no file), left alone with errConfigChanged.
// Someone else's write between the agent's read and its write is so
// never lost; only one landing between that last read and the rename (a
// window of one system call; other writers take no lock the agent could
// share) still can be.
func writeAtomicIf(path string, data []byte, perm os.FileMode, unchanged func() []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // a no-op after the rename
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if unchanged != nil {
		now, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if was := unchanged(); !bytes.Equal(now, was) || (now == nil) != (was == nil) {
			return errConfigChanged
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Reload modes of the SR-IOV device plugin after its config changed. The
// plugin reads config.json only when it starts (and exits on SIGHUP), so
// "reloading" it means getting it restarted.
const (
	// ReloadNone only writes the file: something else restarts the plugin
	// (for example its own liveness probe comparing the config).
	ReloadNone = "none"
	// ReloadTouch writes the new config's SHA-256 to a file; the plugin
	// pod's liveness probe compares it with the one it started with, and
	// the kubelet restarts the plugin. The agent needs no privilege for it
	// beyond writing a shared directory.
	ReloadTouch = "touch"
	// ReloadSignal sends SIGHUP to the process whose PID is in a file;
	// the plugin exits and its container is restarted. The agent and the
	// plugin must share a PID namespace (shareProcessNamespace in one pod).
	ReloadSignal = "signal"
)

// Reload tells the SR-IOV device plugin that its config changed.
type Reload struct {
	Mode string // ReloadNone, ReloadTouch or ReloadSignal
	Path string // the stamp file (touch) or the PID file (signal)
}

// ParseReload reads a --sriov-reload value: "none", "touch:<file>" or
// "signal:<pidfile>".
func ParseReload(s string) (Reload, error) {
	mode, path, _ := strings.Cut(s, ":")
	switch mode {
	case "", ReloadNone:
		if path != "" {
			return Reload{}, fmt.Errorf("--sriov-reload=%s takes no path", s)
		}
		return Reload{Mode: ReloadNone}, nil
	case ReloadTouch, ReloadSignal:
		if path == "" || !filepath.IsAbs(path) {
			return Reload{}, fmt.Errorf("--sriov-reload=%s needs an absolute path: %s:/path", s, mode)
		}
		return Reload{Mode: mode, Path: path}, nil
	}
	return Reload{}, fmt.Errorf("--sriov-reload=%s: want none, touch:<file> or signal:<pidfile>", s)
}

// String is the flag form.
func (r Reload) String() string {
	if r.Mode == "" || r.Mode == ReloadNone {
		return ReloadNone
	}
	return r.Mode + ":" + r.Path
}

// Do tells the plugin that config (the new file content) is in place.
func (r Reload) Do(config []byte) error {
	switch r.Mode {
	case "", ReloadNone:
		return nil
	case ReloadTouch:
		sum := sha256.Sum256(config)
		return writeAtomic(r.Path, []byte(hex.EncodeToString(sum[:])+"\n"), 0o644)
	case ReloadSignal:
		b, err := os.ReadFile(r.Path)
		if err != nil {
			return fmt.Errorf("reading the device plugin's PID file: %w", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return fmt.Errorf("PID file %s holds %q, not a process ID", r.Path, strings.TrimSpace(string(b)))
		}
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				// Not running: it reads the new file when it starts.
				return nil
			}
			return fmt.Errorf("signalling the device plugin (PID %d): %w", pid, err)
		}
		return nil
	}
	return fmt.Errorf("unknown reload mode %q", r.Mode)
}
