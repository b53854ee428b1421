//go:build unix

package httpserve

import "syscall"

// openFileLimit is the process's soft RLIMIT_NOFILE (0 when unknown).
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return uint64(lim.Cur)
}
