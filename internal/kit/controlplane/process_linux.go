package controlplane

import "syscall"

// sysProcAttr: a process group of its own (a Ctrl-C reaches only the
// parent, which stops the child in order) and SIGKILL when the parent's
// launcher thread exits.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
