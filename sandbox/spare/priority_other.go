//go:build !linux

package spare

// lowerPriority does nothing where a priority is not a thread's.
func lowerPriority() {}
