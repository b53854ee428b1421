//go:build unix

package gitreview

import "syscall"

// errNotDir is returned when a path component is a file ("a/file/b").
var errNotDir error = syscall.ENOTDIR
