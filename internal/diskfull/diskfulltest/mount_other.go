//go:build !linux

package diskfulltest

import "syscall"

func mount(string, int) error { return syscall.ENOSYS }

func unmount(string) error { return nil }
