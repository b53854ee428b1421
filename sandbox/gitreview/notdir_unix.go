//go:build unix

package gitreview

import (
	"os"
	"syscall"
)

// errNotDir is returned when a path component is a file ("a/file/b").
var errNotDir error = syscall.ENOTDIR

// openNonBlocking opens p for reading with O_NONBLOCK, so that opening a
// FIFO without a writer returns at once instead of waiting for one.
func openNonBlocking(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
