package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// writeState makes a state directory in tmp owned by pid with start time
// start, naming an outside kubeconfig when given.
func writeState(t *testing.T, tmp, name string, pid int, start, kubeconfig string) string {
	t.Helper()
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	content := strconv.Itoa(pid) + " " + start + "\n"
	if kubeconfig != "" {
		content += kubeconfig + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("admin"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The state directories of dead sandboxes go, with the outside
// kubeconfig they name; a running sandbox's, a reused pid's owner's and
// other directories stay.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	myStart, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(outside, []byte("admin"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A pid that cannot run: above the kernel's pid_max (at most 2^22).
	dead := writeState(t, tmp, stateDirPrefix+"dead", 1<<23, "1", outside)
	live := writeState(t, tmp, stateDirPrefix+"live", os.Getpid(), myStart, "")
	// This process's pid, but another start time: the sandbox that
	// owned the directory died and its pid went to another process.
	reused := writeState(t, tmp, stateDirPrefix+"reused", os.Getpid(), myStart+"0", "")
	other := writeState(t, tmp, "other-dead", 1<<23, "1", "")

	swept := SweepStale(tmp)
	var got []string
	for _, s := range swept {
		got = append(got, filepath.Base(s.Dir))
	}
	if want := []string{stateDirPrefix + "dead", stateDirPrefix + "reused"}; !reflect.DeepEqual(got, want) {
		t.Errorf("swept %v, want %v", got, want)
	}
	for _, d := range []string{dead, reused, outside} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// A state directory starts with its pid file, which names this process.
func TestNewStateDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	s, err := NewStateDir(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	if !strings.HasPrefix(filepath.Base(s.Dir), stateDirPrefix) {
		t.Errorf("state directory %s", s.Dir)
	}
	if swept := SweepStale(os.TempDir()); len(swept) > 0 {
		t.Errorf("a running sandbox's directory was swept: %v", swept)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left %s: %v", s.Dir, err)
	}
}

// A write to a pipe whose reader is gone stops the sandbox instead of
// failing (or, on stdout, killing it).
func TestEPIPEWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if brokenOutput(w) {
		t.Errorf("a pipe with a reader reported broken")
	}
	_ = r.Close()
	if !brokenOutput(w) {
		t.Errorf("a pipe without a reader not reported broken")
	}
	var reason string
	ew := &EPIPEWriter{W: w, Stop: func(r string) { reason = r }}
	if _, err := ew.Write([]byte("report\n")); err != nil {
		t.Errorf("write: %v", err)
	}
	if reason == "" {
		t.Errorf("EPIPE did not stop the sandbox")
	}
}
