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

// WriteUnsyncedVia writes through the temporary file it is given: an
// existing one is used (the target ends up as that very file, with the
// new content and mode), a missing one is made; either way it is gone
// after, and the directory holds only the target.
func TestWriteUnsyncedVia(t *testing.T) {
	for _, prepared := range []bool{true, false} {
		dir := t.TempDir()
		path, tmp := filepath.Join(dir, "meta.json"), filepath.Join(dir, ".meta.json.new")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		var before os.FileInfo
		if prepared {
			if err := os.WriteFile(tmp, []byte("left over, longer than the new content"), 0o600); err != nil {
				t.Fatal(err)
			}
			before, _ = os.Stat(tmp)
		}
		if err := atomicfile.WriteUnsyncedVia(path, tmp, []byte("new"), 0o640); err != nil {
			t.Fatalf("prepared=%v: %v", prepared, err)
		}
		after, err := os.Stat(path)
		if b, _ := os.ReadFile(path); string(b) != "new" || err != nil || after.Mode().Perm() != 0o640 {
			t.Fatalf("prepared=%v: target %q, mode %v, %v", prepared, b, after.Mode(), err)
		}
		if prepared && !os.SameFile(before, after) {
			t.Fatalf("the prepared temporary file was not the one renamed into place")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Fatalf("prepared=%v: the directory holds %d entries, want only the target", prepared, len(entries))
		}
	}
}
