package eventrecorder

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/eni-operator/eni-operator/internal/bounded"
)

type capture struct{ notes []string }

func (c *capture) Eventf(_, _ runtime.Object, _, _, _, note string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(note, args...))
}

func (c *capture) AnnotatedEventf(r, rel runtime.Object, _ map[string]string, t, reason, a, note string, args ...any) {
	c.Eventf(r, rel, t, reason, a, note, args...)
}

func TestRecorderBoundsNotes(t *testing.T) {
	c := &capture{}
	r := Bounded(c)
	r.Eventf(nil, nil, "Normal", "R", "A", "short %d", 1)
	r.Eventf(nil, nil, "Warning", "R", "A", "%s", strings.Repeat("x", 5000))
	if c.notes[0] != "short 1" {
		t.Errorf("note = %q", c.notes[0])
	}
	if n := len(c.notes[1]); n > bounded.EventNote {
		t.Errorf("note of %d bytes passed", n)
	}
	if Bounded(nil) != nil {
		t.Error("Bounded(nil) must stay nil so callers' nil checks work")
	}
}
