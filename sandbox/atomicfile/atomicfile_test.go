package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acs-project/acs/sandbox/atomicfile"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	for _, content := range []string{"one", "two, longer"} {
		if err := atomicfile.Write(p, []byte(content), 0o640); err != nil {
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
	if err := atomicfile.Write(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Fatal("wrote through the symlink")
	}
	// A failure leaves nothing behind.
	if err := atomicfile.Write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("leftover files: %v", entries)
	}
}

// WriteNoDirSync replaces the content as Write does (the directory sync
// it leaves to the caller is not observable without a power cut).
func TestWriteNoDirSync(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	for _, content := range []string{"one", "two, longer"} {
		if err := atomicfile.WriteNoDirSync(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Fatalf("content %q", b)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left %d entries, want the file only", len(entries))
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}
