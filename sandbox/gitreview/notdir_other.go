//go:build !unix

package gitreview

import "errors"

// errNotDir never matches on platforms without ENOTDIR.
var errNotDir = errors.New("not a directory")
