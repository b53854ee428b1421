//go:build linux

package procenv

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setNonDumpable clears the process's dumpable attribute
// (prctl(PR_SET_DUMPABLE, 0)).
func setNonDumpable() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return fmt.Errorf("procenv: prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}

// wipeStartEnviron overwrites the withheld values in the environment block
// the kernel shows as /proc/self/environ: the range env_start..env_end of
// /proc/self/stat (fields 50 and 51), read and written through
// /proc/self/mem. The Go runtime copied the block at start and never reads
// it again.
func wipeStartEnviron() error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("procenv: locate the environment block: %w", err)
	}
	// The fields after the command name in parentheses start at field 3.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 49 {
		return fmt.Errorf("procenv: locate the environment block: /proc/self/stat has %d fields", len(f)+2)
	}
	start, err1 := strconv.ParseInt(f[47], 10, 64)
	end, err2 := strconv.ParseInt(f[48], 10, 64)
	if err1 != nil || err2 != nil || start <= 0 || end < start || end-start > 64<<20 {
		return fmt.Errorf("procenv: locate the environment block: env_start %q, env_end %q", f[47], f[48])
	}
	if end == start {
		return nil
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("procenv: overwrite the environment block: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("procenv: read the environment block: %w", err)
	}
	if !wipe(block) {
		return nil
	}
	if _, err := mem.WriteAt(block, start); err != nil {
		return fmt.Errorf("procenv: overwrite the environment block: %w", err)
	}
	return nil
}
