package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Launcher starts processes from one goroutine locked to its OS thread
// for the launcher's life: the kernel sends the parent death signal when
// the parent THREAD exits, not the process. Each control plane has one;
// other daemons a test runs beside it (the e2e node's) may use it too.
type Launcher struct {
	mu     sync.Mutex
	reqs   chan launch
	closed bool
}

type launch struct {
	cmd *exec.Cmd
	err chan error
}

// NewLauncher starts a launcher; Close ends it.
func NewLauncher() *Launcher {
	l := &Launcher{reqs: make(chan launch)}
	go func() {
		// Never unlocked: when this returns its thread exits, and any
		// process still running gets SIGKILL.
		runtime.LockOSThread()
		for r := range l.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return l
}

func (l *Launcher) launch(cmd *exec.Cmd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("the launcher is closed")
	}
	r := launch{cmd: cmd, err: make(chan error, 1)}
	l.reqs <- r
	return <-r.err
}

// Close ends the launcher's thread: processes still running get SIGKILL.
func (l *Launcher) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.reqs)
	}
}

// Process is a running process of a launcher.
type Process struct {
	// Name names it in errors; Log is the file its output goes to.
	Name, Log string
	cmd       *exec.Cmd
	done      chan struct{}
}

// Start runs bin with args, its output appended to logPath, in a process
// group of its own (a Ctrl-C reaches only the test, which stops it) and
// dying with the launcher.
func (l *Launcher) Start(name, bin, logPath string, args ...string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	err = l.launch(cmd)
	_ = log.Close() // the process holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to go.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop sends SIGTERM, then SIGKILL after grace; false when it had to kill.
func (p *Process) Stop(grace time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.Kill()
		return false
	}
}

// WaitUntil polls ok until it returns nil; an error (the process exited,
// timeout or ctx ended) names what was awaited and carries the tail of
// the process's log.
func (p *Process) WaitUntil(ctx context.Context, timeout time.Duration, what string, ok func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		last := ok()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before %s; %s:\n%s", p.Name, p.cmd.ProcessState, what, p.Log, Tail(p.Log, 3000))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not within %v (%v): %w; %s:\n%s", p.Name, what, timeout, last, ctx.Err(), p.Log, Tail(p.Log, 3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HTTPOK says why url does not answer 200 through hc, or nil.
func HTTPOK(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// Tail is the last n bytes of the file at path, from a line's start.
func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
