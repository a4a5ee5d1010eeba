//go:build !linux

package controlplane

import "syscall"

// sysProcAttr: no parent death signal outside Linux; a parent killed with
// SIGKILL there leaves its control plane running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
