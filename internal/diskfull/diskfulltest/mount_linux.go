package diskfulltest

import (
	"fmt"
	"syscall"
)

func mount(dir string, size int) error {
	return syscall.Mount("acs-diskfulltest", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
}

// unmount detaches the file system even while a file is still open on it.
func unmount(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
