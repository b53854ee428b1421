//go:build unix

package fileapi

import (
	"errors"
	"syscall"
)

// isNotDir reports ENOTDIR (a path component is a regular file).
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
