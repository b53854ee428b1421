package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/sandbox/atomicfile"
)

// Write, WriteNoDirSync and WriteUnsynced behave alike but for the syncs,
// which are not observable without a power cut.
func TestWrite(t *testing.T) {
	for name, write := range map[string]func(string, []byte, os.FileMode) error{
		"Write": atomicfile.Write, "WriteNoDirSync": atomicfile.WriteNoDirSync, "WriteUnsynced": atomicfile.WriteUnsynced,
	} {
		t.Run(name, func(t *testing.T) { testWrite(t, write) })
	}
	if err := atomicfile.SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncDirAndParent(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncDirAndParent(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("SyncDirAndParent of a missing directory succeeded")
	}
}

func testWrite(t *testing.T, write func(string, []byte, os.FileMode) error) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	for _, content := range []string{"one", "two, longer"} {
		if err := write(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Fatalf("content %q", b)
		}
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode())
	}
	// A symlink at the path is replaced, not written through.
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(outside, link)
	if err := write(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatal("wrote through the symlink")
	}
	// A failure leaves nothing behind.
	if err := write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("leftover files: %v", entries)
	}
}
