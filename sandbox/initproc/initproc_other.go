//go:build !linux

package initproc

import (
	"errors"
	"time"
)

// Needed is false here: the sandbox image is Linux.
func Needed() bool { return false }

// Run is not supported here.
func Run(argv []string) (int, error) {
	return 0, errors.New("init: acting as PID 1 is supported on Linux only")
}

// Supervise is not supported here.
func Supervise(argv []string, budget time.Duration, parentFD int) (int, error) {
	return 0, errors.New("init: supervising a sandbox is supported on Linux only")
}
