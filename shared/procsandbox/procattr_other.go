//go:build !linux

package procsandbox

import (
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group.
func sysProcAttr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// initArgs are none: the agent server is not its sandbox's init here.
func initArgs(time.Duration) []string { return nil }
