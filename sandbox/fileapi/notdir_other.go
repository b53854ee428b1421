//go:build !unix

package fileapi

import "os"

func isNotDir(error) bool { return false }

func openNonBlocking(p string) (*os.File, error) { return os.Open(p) }
