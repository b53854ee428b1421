//go:build !linux

package procenv

// setNonDumpable has no equivalent here.
func setNonDumpable() error { return nil }

// wipeStartEnviron has nothing to do where no /proc shows the block.
func wipeStartEnviron() error { return nil }
