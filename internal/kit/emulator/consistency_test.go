package emulator

import (
	"strings"
	"testing"
	"time"
)

// A negative delay is refused with the field named, and leaves every
// delay as it was; a valid one changes only its own.
func TestConfigureRefusesNegativeDelays(t *testing.T) {
	e := New(Options{TagDelay: time.Second})
	for _, name := range []string{"tagDelay", "attachDelay", "deleteDelay", "visibilityDelay", "detachDelay"} {
		neg := &Duration{Duration: -time.Millisecond}
		c := map[string]Config{"tagDelay": {TagDelay: neg}, "attachDelay": {AttachDelay: neg}, "deleteDelay": {DeleteDelay: neg},
			"visibilityDelay": {VisibilityDelay: neg}, "detachDelay": {DetachDelay: neg}}[name]
		c.AttachDelay = &Duration{Duration: time.Minute}
		if name == "attachDelay" {
			c.AttachDelay = neg
		}
		err := e.Configure(c)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s -1ms: error %v, want one naming it", name, err)
		}
	}
	if err := e.Configure(Config{DeleteDelay: &Duration{Duration: 2 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	e.cfgMu.Lock()
	got := e.cfg.lag
	e.cfgMu.Unlock()
	if want := (lagConfig{tag: time.Second, delete: 2 * time.Second}); got != want {
		t.Errorf("delays %+v, want %+v (refused changes applied nothing)", got, want)
	}
}
