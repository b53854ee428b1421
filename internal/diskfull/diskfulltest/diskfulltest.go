// Package diskfulltest gives tests a real file system that runs out of
// space: a small tmpfs mounted for the test. A full disk is what users hit,
// and only a real one shows how every layer (bbolt, the event log, file
// writes) reports it; a fake writer would test only the fake.
package diskfulltest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Dir mounts a tmpfs of size bytes on a new temporary directory and returns
// it; it is unmounted when the test ends. Mounting needs root (make test and
// CI run as root); elsewhere the test is skipped with the reason.
func Dir(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := mount(dir, size); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) {
			t.Skipf("a full disk needs a small tmpfs, and mounting one needs root: %v", err)
		}
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until its file system has no space left, and
// returns a function that removes it again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "diskfulltest-filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		os.Remove(path)
		t.Fatalf("fill %s: %v, want ENOSPC", dir, err)
	}
	removed := false
	free = func() {
		if !removed {
			removed = true
			if err := os.Remove(path); err != nil {
				t.Errorf("free %s: %v", dir, err)
			}
		}
	}
	t.Cleanup(free)
	return free
}
