package testenv

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// Signal sends sig to the process: SIGSTOP and SIGCONT pause and resume
// it as a node that stops scheduling it would (a long GC pause, a frozen
// VM), SIGKILL ends it.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.cmd == nil {
		return fmt.Errorf("process already stopped")
	}
	return p.cmd.Process.Signal(sig)
}

// Exited says whether the process has ended on its own (it is a zombie,
// not yet waited for, until Stop).
func (p *Process) Exited() bool {
	if p.cmd == nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
