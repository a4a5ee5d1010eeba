package ec2

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// A closed WriteGate refuses writes before they are sent, and lets reads
// through; an open one lets writes through.
func TestWriteGate(t *testing.T) {
	w := newWorld(t, emulator.World{NetworkInterfaces: []emulator.NetworkInterfaceSpec{{Subnet: "a", Count: 1}}})
	closed := errors.New("lease not held")
	var open atomic.Bool // read by the batcher's goroutine
	c := w.client(t, Config{WriteGate: func() error {
		if open.Load() {
			return nil
		}
		return closed
	}})
	ctx := context.Background()
	eni := w.loaded.NetworkInterfaces[0].ID
	if err := c.CreateTags(ctx, eni, map[string]string{"a": "b"}); !errors.Is(err, closed) {
		t.Errorf("CreateTags with the gate closed: %v, want the gate's error", err)
	}
	if _, err := c.GetENI(ctx, eni); err != nil {
		t.Errorf("a read with the gate closed: %v", err)
	}
	if n := w.emu.Counts()["CreateTags"].Calls; n != 0 {
		t.Errorf("%d CreateTags reached EC2 with the gate closed", n)
	}
	open.Store(true)
	if err := c.CreateTags(ctx, eni, map[string]string{"a": "b"}); err != nil {
		t.Errorf("CreateTags with the gate open: %v", err)
	}
	if n := w.emu.Counts()["CreateTags"].Calls; n != 1 {
		t.Errorf("%d CreateTags calls with the gate open, want 1", n)
	}
}
