package fileblob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acs-project/acs/internal/diskfull/diskfulltest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/blobtest"
	"github.com/acs-project/acs/shared/fileblob"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) acs.Blobs {
		s, err := fileblob.New(filepath.Join(t.TempDir(), "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func newStore(t *testing.T) (*fileblob.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "blobs")
	s, err := fileblob.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

// Objects are plain files at their key's path, readable only by the owner,
// and deleting the last object of a directory removes the directory.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	if err := s.Put(ctx, "archives/ab/x.tar.gz", strings.NewReader("data")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "archives", "ab", "x.tar.gz")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("object mode %v, want 0600", st.Mode().Perm())
	}
	if err := s.Delete(ctx, "archives/ab/x.tar.gz"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "archives")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty parent directories stay: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("root removed: %v", err)
	}
}

// A key cannot be both an object and a directory of objects.
func TestObjectDirectoryConflict(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.Put(ctx, "a/b", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a", strings.NewReader("y")); !errors.Is(err, acs.ErrConflict) {
		t.Fatalf("put over a directory: %v, want ErrConflict", err)
	}
	if err := s.Put(ctx, "a/b/c", strings.NewReader("z")); !errors.Is(err, acs.ErrConflict) {
		t.Fatalf("put below an object: %v, want ErrConflict", err)
	}
	keys, err := s.List(ctx, "")
	if err != nil || !slices.Equal(keys, []string{"a/b"}) {
		t.Fatalf("list %q %v", keys, err)
	}
}

// Temporary files of writes in progress (or left by a crash) are not
// objects, and keys cannot name them.
func TestTemporaryFilesHidden(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	if err := s.Put(ctx, "d/real", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", ".fileblob-tmp-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List(ctx, "d/")
	if err != nil || !slices.Equal(keys, []string{"d/real"}) {
		t.Fatalf("list %q %v", keys, err)
	}
	if _, err := s.Get(ctx, "d/.fileblob-tmp-123"); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("get of a temporary file: %v, want ErrInvalid", err)
	}
}

// Oversized keys are invalid rather than file system errors.
func TestLongKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, key := range []string{strings.Repeat("a", 256), strings.Repeat("a/", 600) + "a"} {
		if err := s.Put(ctx, key, bytes.NewReader(nil)); !errors.Is(err, acs.ErrInvalid) {
			t.Fatalf("put of a %d-byte key: %v, want ErrInvalid", len(key), err)
		}
	}
	if err := s.Put(ctx, strings.Repeat("a", 255), bytes.NewReader(nil)); err != nil {
		t.Fatalf("255-byte segment: %v", err)
	}
}

func TestNewRejectsEmptyRoot(t *testing.T) {
	if _, err := fileblob.New(""); !errors.Is(err, acs.ErrInvalid) {
		t.Fatalf("New(\"\"): %v", err)
	}
}

// TestFullDiskIsStorageFull: a Put that finds the disk full fails with
// acs.ErrStorageFull, leaves the previous object and no temporary file, and
// works once space is freed.
func TestFullDiskIsStorageFull(t *testing.T) {
	dir := diskfulltest.Dir(t, 1<<20)
	s, err := fileblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "a/obj", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	free := diskfulltest.Fill(t, dir)
	big := bytes.Repeat([]byte("x"), 256<<10)
	if err := s.Put(ctx, "a/obj", bytes.NewReader(big)); !errors.Is(err, acs.ErrStorageFull) {
		t.Fatalf("put on a full disk: %v, want ErrStorageFull", err)
	}
	r, err := s.Get(ctx, "a/obj")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != "old" {
		t.Fatalf("object after the failed put: %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "blobs", "a")); len(ents) != 1 {
		t.Fatalf("files left in the object's directory: %v", ents)
	}
	free()
	if err := s.Put(ctx, "a/obj", bytes.NewReader(big)); err != nil {
		t.Fatalf("put after freeing space: %v", err)
	}
}
