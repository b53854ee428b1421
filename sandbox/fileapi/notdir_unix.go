//go:build unix

package fileapi

import (
	"errors"
	"os"
	"syscall"
)

// isNotDir reports ENOTDIR (a path component is a regular file).
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// openNonBlocking opens p for reading with O_NONBLOCK, so that opening a
// FIFO without a writer returns at once instead of waiting for one.
func openNonBlocking(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
