//go:build linux

package procsandbox

import (
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group and, when cgroupFD
// is not negative, starts it in that cgroup.
func sysProcAttr(cgroupFD int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: cgroupFD >= 0, CgroupFD: max(cgroupFD, 0)}
}

// initArgs make the agent server its sandbox's init (initproc.Supervise):
// the subreaper of every process the sandbox starts, stopping them all
// within budget. Its parent's pipe is the child's fd 3 (ExtraFiles[0]).
func initArgs(budget time.Duration) []string {
	return []string{"--init=" + budget.String(), "--init-parent-fd=3"}
}
