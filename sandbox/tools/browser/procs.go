package browser

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ProcessesUsing lists the processes (other than this one) whose command
// line holds --user-data-dir=dir: a Chromium started with that profile and
// its helpers. It reads /proc and so finds nothing where there is none.
func ProcessesUsing(dir string) []int {
	want := []byte("--user-data-dir=" + dir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// killLeftovers kills the processes that still run with the profile dir.
// Chromium's helpers (zygote, network service, renderers) can outlive the
// main process for a moment, and one can fork just as the main process
// dies, so it looks again until a few passes in a row find nothing.
func killLeftovers(dir string) {
	if dir == "" {
		return
	}
	const (
		quietPasses = 3
		pause       = 10 * time.Millisecond
		limit       = 3 * time.Second
	)
	deadline := time.Now().Add(limit)
	for quiet := 0; quiet < quietPasses && time.Now().Before(deadline); time.Sleep(pause) {
		pids := ProcessesUsing(dir)
		if len(pids) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeAllRetry removes dir, trying again for a while: a dying Chromium
// helper can still create files in it.
func removeAllRetry(dir string) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
