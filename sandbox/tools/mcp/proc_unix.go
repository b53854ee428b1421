//go:build unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the server in a process group of its own, so that
// the processes it starts (npx, uvx, shells) are stopped with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup signals the process group led by p (SIGKILL when hard, else
// SIGTERM), and p itself in case it left the group.
func killGroup(p *os.Process, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	if p.Pid > 0 {
		_ = syscall.Kill(-p.Pid, sig)
	}
	_ = p.Signal(sig)
}
