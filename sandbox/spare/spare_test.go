package spare_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/spare"
)

// fill makes what a spare holds: a file and a subdirectory.
func fill(dir string) error {
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644)
}

// take waits until the pool hands out a spare to dst.
func take(t *testing.T, p *spare.Pool, dst string) {
	t.Helper()
	if !testwait.Until(10*time.Second, func() bool { p.Fill(); return p.Take(dst) }) {
		t.Fatalf("no spare was handed out to %s", dst)
	}
}

func TestTakeRenamesAFilledSpareIntoPlaceAndMakesAnother(t *testing.T) {
	root := t.TempDir()
	p := spare.New(filepath.Join(root, "spares"), 1, 0o750, fill)
	defer p.Close()
	for i, name := range []string{"a", "b", "c"} {
		dst := filepath.Join(root, name)
		take(t, p, dst)
		fi, err := os.Stat(dst)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Fatalf("take #%d: %s is %v (%v), want a directory with mode 0750", i+1, dst, fi, err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "sub", "f")); err != nil || string(b) != "x" {
			t.Fatalf("take #%d: the spare was not filled: %q %v", i+1, b, err)
		}
	}
}

func TestTakeLeavesAnExistingDestinationAlone(t *testing.T) {
	root := t.TempDir()
	p := spare.New(filepath.Join(root, "spares"), 1, 0o700, nil)
	defer p.Close()
	for _, tc := range []struct{ name, dst string }{
		{"existing empty directory", filepath.Join(root, "empty")},
		{"existing file", filepath.Join(root, "file")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "existing file" {
				os.WriteFile(tc.dst, []byte("keep"), 0o644)
			} else {
				os.Mkdir(tc.dst, 0o755)
			}
			if !testwait.Until(10*time.Second, func() bool { return p.Ready() == 1 }) {
				t.Fatal("no spare became ready")
			}
			if p.Take(tc.dst) {
				t.Fatalf("Take(%s) replaced what was there", tc.dst)
			}
			if p.Ready() != 1 {
				t.Fatalf("a refused take used the spare: %d ready", p.Ready())
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(root, "file")); err != nil || string(b) != "keep" {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
}

func TestTakeWithoutTheParentKeepsTheSpare(t *testing.T) {
	root := t.TempDir()
	p := spare.New(filepath.Join(root, "spares"), 1, 0o700, nil)
	defer p.Close()
	take(t, p, filepath.Join(root, "first"))
	if p.Ready() != 0 {
		t.Fatalf("a spare was made before Fill: %d ready", p.Ready())
	}
	p.Fill()
	if !testwait.Until(10*time.Second, func() bool { return p.Ready() == 1 }) {
		t.Fatal("no new spare was made after a take")
	}
	if p.Take(filepath.Join(root, "missing", "dst")) {
		t.Fatal("Take into a missing parent reported success")
	}
	// The spare was kept: the next take needs no new one.
	if p.Ready() != 1 || !p.Take(filepath.Join(root, "second")) {
		t.Fatal("the spare a failed take kept was not handed out")
	}
}

func TestNewRemovesLeftoversAndAFailingMakeTurnsThePoolOff(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "spares")
	os.MkdirAll(filepath.Join(dir, "s-leftover"), 0o700)
	var calls atomic.Int32
	p := spare.New(dir, 1, 0o700, func(string) error { calls.Add(1); return errors.New("disk trouble") })
	if !testwait.Until(10*time.Second, func() bool { return calls.Load() > 0 }) {
		t.Fatal("make was never called")
	}
	p.Close()
	if _, err := os.Stat(filepath.Join(dir, "s-leftover")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a leftover spare was kept: %v", err)
	}
	if p.Take(filepath.Join(root, "dst")) {
		t.Fatal("a pool whose make fails handed out a spare")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed spare was left behind: %v", entries)
	}
	if calls.Load() != 1 {
		t.Fatalf("make was called %d times after failing, want 1", calls.Load())
	}
}

// Concurrent takes hand out each spare once.
func TestConcurrentTakesHandOutEachSpareOnce(t *testing.T) {
	root := t.TempDir()
	p := spare.New(filepath.Join(root, "spares"), 2, 0o700, fill)
	defer p.Close()
	var wg sync.WaitGroup
	var got atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := filepath.Join(root, "dst", string(rune('a'+i)))
			if testwait.Until(10*time.Second, func() bool { p.Fill(); return p.Take(dst) }) {
				got.Add(1)
			}
		}()
	}
	os.Mkdir(filepath.Join(root, "dst"), 0o755)
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Join(root, "dst"))
	if got.Load() != 8 || len(entries) != 8 {
		t.Fatalf("%d takes succeeded, %d directories made; want 8 and 8", got.Load(), len(entries))
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, "dst", e.Name(), "sub", "f")); err != nil {
			t.Fatalf("%s was not a filled spare: %v", e.Name(), err)
		}
	}
}
