package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	s := String("eni-agent", "v1.2.3")
	if !strings.HasPrefix(s, "eni-agent v1.2.3 ") || !strings.HasSuffix(s, " "+runtime.Version()) {
		t.Fatalf("%q", s)
	}
	if rev, _ := revision(); rev != "" && !strings.Contains(s, "("+rev) {
		t.Fatalf("%q lacks the revision %s", s, rev)
	}
	if strings.Count(s, "\n") != 0 {
		t.Fatalf("%q is not one line", s)
	}
}
