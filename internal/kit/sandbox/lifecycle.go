package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The sandbox leaves nothing behind, whatever happens to it:
//
//   - Everything it writes lives in its state directory,
//     os.TempDir()/eni-sandbox-*: the kubeconfig (administrator
//     credentials), the operator log, and — because the sandbox points
//     TMPDIR there — etcd's data and the API server's certificates and
//     keys. A clean exit removes it.
//   - etcd and kube-apiserver die with the sandbox even when it is killed
//     with SIGKILL and has no chance to stop them: internal/kit/controlplane
//     starts them with a parent death signal.
//   - A state directory whose sandbox died without removing it (SIGKILL,
//     a crash) is removed by the next sandbox at its start: each holds a
//     pid file naming its sandbox process (pid and start time, so a reused
//     pid is not mistaken for it).

const (
	// stateDirPrefix names the sandboxes' state directories in os.TempDir().
	stateDirPrefix = "eni-sandbox-"
	// pidFileName is the state directory's owner: "<pid> <start time>",
	// then optionally the path of a kubeconfig written outside the
	// directory (--dir), removed with it.
	pidFileName = "eni-sandbox.pid"
	// unownedGrace is how old a state directory without a pid file must be
	// before a sandbox removes it: the pid file is written right after the
	// directory is created, so only a sandbox killed in between (or one of
	// an older version) leaves such a directory.
	unownedGrace = 10 * time.Minute
)

// StateDir is a sandbox's state directory.
type StateDir struct {
	// Dir is its path.
	Dir string
}

// NewStateDir removes the state directories of dead sandboxes from
// os.TempDir() (saying so on progress), then creates this sandbox's and
// writes its pid file.
func NewStateDir(progress io.Writer) (*StateDir, error) {
	for _, r := range SweepStale(os.TempDir()) {
		fmt.Fprintf(progress, "» removed %s, left by a sandbox that did not exit cleanly (%s)\n", r.Dir, r.Why)
	}
	dir, err := os.MkdirTemp("", stateDirPrefix)
	if err != nil {
		return nil, err
	}
	s := &StateDir{Dir: dir}
	if err := s.writePidFile(""); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// RecordKubeconfig names a kubeconfig written outside the directory, so
// the next sandbox removes it too should this one be killed.
func (s *StateDir) RecordKubeconfig(path string) error { return s.writePidFile(path) }

func (s *StateDir) writePidFile(kubeconfig string) error {
	start, err := processStart(os.Getpid())
	if err != nil {
		return err
	}
	content := fmt.Sprintf("%d %s\n", os.Getpid(), start)
	if kubeconfig != "" {
		content += kubeconfig + "\n"
	}
	tmp := filepath.Join(s.Dir, pidFileName+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, pidFileName))
}

// Remove removes the directory and everything in it.
func (s *StateDir) Remove() error { return os.RemoveAll(s.Dir) }

// Swept is a state directory SweepStale removed.
type Swept struct{ Dir, Why string }

// SweepStale removes the state directories in tmp whose sandbox is no
// longer running, with the outside kubeconfig each names. Directories of
// other users and of running sandboxes are left alone.
func SweepStale(tmp string) []Swept {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var out []Swept
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), stateDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) {
			continue
		}
		why, stale := staleReason(dir, fi.ModTime())
		if !stale {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			out = append(out, Swept{Dir: dir, Why: why})
		}
	}
	return out
}

// staleReason says whether the sandbox owning dir is gone, and why; it
// removes the outside kubeconfig that sandbox recorded.
func staleReason(dir string, mtime time.Time) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if errors.Is(err, os.ErrNotExist) {
		if time.Since(mtime) < unownedGrace {
			return "", false
		}
		return "no pid file", true
	}
	if err != nil {
		return "", false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	f := strings.Fields(lines[0])
	if len(f) != 2 {
		return "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return "", false
	}
	if alive(pid, f[1]) {
		return "", false
	}
	// Only a file named kubeconfig: the pid file is ours (the directory
	// is), but remove nothing else on its word.
	if len(lines) > 1 && filepath.Base(lines[1]) == "kubeconfig" && filepath.IsAbs(lines[1]) {
		_ = os.Remove(lines[1])
	}
	return fmt.Sprintf("process %d is gone", pid), true
}

// alive says whether process pid still runs and is the one that started
// at start (pids are reused).
func alive(pid int, start string) bool {
	got, err := processStart(pid)
	if err != nil {
		return !errors.Is(err, errNoProcess)
	}
	return got == start
}

var errNoProcess = errors.New("no such process")

// WatchOutput calls stop once one of files is a pipe or socket whose
// reader went away (`make demo | tee log` and tee died): the sandbox has
// nobody to report to and shuts down as on Ctrl-C. It checks every half
// second until ctx ends.
func WatchOutput(ctx context.Context, stop func(reason string), files ...*os.File) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		for _, f := range files {
			if brokenOutput(f) {
				stop(f.Name() + " is a pipe nobody reads any more")
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// EPIPEWriter writes to W; a write that fails because the pipe's reader
// went away (EPIPE; the sandbox receives SIGPIPE through signal.Notify, so
// the failed write does not kill it) calls Stop. Later writes are dropped.
type EPIPEWriter struct {
	W    io.Writer
	Stop func(reason string)

	broken atomic.Bool
}

func (w *EPIPEWriter) Write(p []byte) (int, error) {
	if w.broken.Load() {
		return len(p), nil
	}
	n, err := w.W.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		w.broken.Store(true)
		w.Stop("output pipe closed")
		return len(p), nil
	}
	return n, err
}
