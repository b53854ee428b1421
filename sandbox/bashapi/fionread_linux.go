package bashapi

import "golang.org/x/sys/unix"

// pipeHolds returns how many bytes the pipe fd holds, or 0 when unknown.
func pipeHolds(fd uintptr) int {
	n, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
