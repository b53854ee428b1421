//go:build !unix

package fileapi

func isNotDir(error) bool { return false }
