//go:build !unix

package gitreview

import (
	"errors"
	"os"
)

// errNotDir never matches on platforms without ENOTDIR.
var errNotDir = errors.New("not a directory")

func openNonBlocking(p string) (*os.File, error) { return os.Open(p) }
