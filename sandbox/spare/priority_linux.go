package spare

import "syscall"

// lowerPriority gives the calling thread the lowest CPU priority (nice
// 19); on Linux a priority is a thread's. Best effort.
func lowerPriority() {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
