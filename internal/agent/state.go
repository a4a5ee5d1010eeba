package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
)

// nodeState is what the agent must remember across restarts and cannot
// read back from the host: once a device is bound to a DPDK driver its
// network interface (and so its MAC address and name) is gone, and a
// renamed interface no longer tells its kernel name. It lives in a
// node-local file; the NodeENI status is a report, not this memory.
type nodeState struct {
	// Devices are the interfaces the agent changed in a way it undoes when
	// they are released, by ENI ID.
	Devices map[string]*deviceRecord `json:"devices,omitempty"`
	// SRIOVOwned are the device plugin resources whose config entries the
	// agent wrote.
	SRIOVOwned []string `json:"sriovOwned,omitempty"`
}

// deviceRecord is one interface the agent renamed or bound to a DPDK
// driver.
type deviceRecord struct {
	NodeENI string `json:"nodeENI,omitempty"`
	MAC     string `json:"mac"`
	// Name is the interface's name as last seen; OriginalName its kernel
	// name before the agent renamed it ("" when not renamed).
	Name         string `json:"name,omitempty"`
	OriginalName string `json:"originalName,omitempty"`
	// PCIAddress of the device; OriginalDriver the driver it had before
	// the agent bound it to BoundDriver ("" when not bound).
	PCIAddress     string `json:"pciAddress,omitempty"`
	OriginalDriver string `json:"originalDriver,omitempty"`
	BoundDriver    string `json:"boundDriver,omitempty"`
}

func (r *deviceRecord) empty() bool { return r.OriginalName == "" && r.BoundDriver == "" }

// loadState reads the state file; a missing file is an empty state.
func loadState(path string) (*nodeState, error) {
	st := &nodeState{Devices: map[string]*deviceRecord{}}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the agent's state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("the agent's state %s is corrupt (move it away to start afresh; bound devices are then restored by the kernel's choice of driver): %w", path, err)
	}
	if st.Devices == nil {
		st.Devices = map[string]*deviceRecord{}
	}
	return st, nil
}

func (s *nodeState) clone() *nodeState {
	c := &nodeState{Devices: make(map[string]*deviceRecord, len(s.Devices)), SRIOVOwned: append([]string(nil), s.SRIOVOwned...)}
	for k, v := range s.Devices {
		r := *v
		c.Devices[k] = &r
	}
	return c
}

func (s *nodeState) equal(o *nodeState) bool {
	return reflect.DeepEqual(s.normalized(), o.normalized())
}

func (s *nodeState) normalized() *nodeState {
	c := s.clone()
	for k, v := range c.Devices {
		if v.empty() {
			delete(c.Devices, k)
		}
	}
	slices.Sort(c.SRIOVOwned)
	if len(c.SRIOVOwned) == 0 {
		c.SRIOVOwned = nil
	}
	return c
}

// save writes the state atomically; a path of "" keeps it in memory only.
func (s *nodeState) save(path string) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(s.normalized(), "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the agent's state %s: %w", path, err)
	}
	return nil
}
