//go:build !unix

package httpserve

// openFileLimit is unknown here.
func openFileLimit() uint64 { return 0 }
