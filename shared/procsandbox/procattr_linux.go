//go:build linux

package procsandbox

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel
// send it SIGTERM if the parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
