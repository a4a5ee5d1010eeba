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

// launcher starts every child of a control plane from one goroutine
// locked to its OS thread for the control plane's life: the kernel sends
// the parent death signal when the parent THREAD exits, not the process.
type launcher struct {
	mu     sync.Mutex
	reqs   chan launch
	closed bool
}

type launch struct {
	cmd *exec.Cmd
	err chan error
}

func newLauncher() *launcher {
	l := &launcher{reqs: make(chan launch)}
	go func() {
		// Never unlocked: when this returns its thread exits, and any
		// child still running gets SIGKILL.
		runtime.LockOSThread()
		for r := range l.reqs {
			r.err <- r.cmd.Start()
		}
	}()
	return l
}

func (l *launcher) start(cmd *exec.Cmd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("the control plane is stopped")
	}
	r := launch{cmd: cmd, err: make(chan error, 1)}
	l.reqs <- r
	return <-r.err
}

func (l *launcher) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.reqs)
	}
}

// child is a running binary of the control plane; done closes when it
// exits.
type child struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
}

// startChild runs bin with args, its output appended to logPath, in a
// process group of its own and dying with the launcher (sysProcAttr).
func (l *launcher) startChild(name, bin, logPath string, args ...string) (*child, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	err = l.start(cmd)
	_ = log.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.done) }()
	return c, nil
}

// kill sends SIGKILL and waits for the child to go.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// stop sends SIGTERM, then SIGKILL after grace.
func (c *child) stop(grace time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		c.kill()
	}
}

// waitReady polls url with hc until it answers 200; an error (the child
// exited, timeout or ctx ended) carries the tail of the child's log.
func (c *child) waitReady(ctx context.Context, timeout time.Duration, hc *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		last := httpOK(hc, url)
		if last == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited (%v) before %s answered; %s:\n%s", c.name, c.cmd.ProcessState, url, c.log, Tail(c.log, 3000))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready (%v): %w; %s:\n%s", c.name, url, last, ctx.Err(), c.log, Tail(c.log, 3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpOK(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
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
