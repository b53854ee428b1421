package boltstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/acs-project/acs/shared/storetest"
)

// Stored-data compatibility. testdata/schema<N>.db holds the records of
// storetest's fixture as the version writing schema N stored them; every
// later version must read each of these files (migrating the older ones)
// as the fixture's domain values. The file of the current schema is also
// the reference of the record format: the fixture written now must be
// stored with the same bytes. A change of format is thus deliberate: bump
// schemaVersion, migrate, and add the new schema's file next to the old
// ones (ACS_UPDATE_STORE_FIXTURES=1 writes it; never rewrite an older
// one).

func fixturePath(version int) string {
	return filepath.Join("testdata", fmt.Sprintf("schema%d.db", version))
}

// writeFixtureFile writes the current schema's fixture file when
// ACS_UPDATE_STORE_FIXTURES is set.
func writeFixtureFile(t *testing.T) {
	if os.Getenv("ACS_UPDATE_STORE_FIXTURES") == "" {
		return
	}
	tmp := filepath.Join(t.TempDir(), "fixture.db")
	s, err := Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WriteFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Compacted, so that the file holds no free pages.
	src, err := bolt.Open(tmp, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := fixturePath(schemaVersion)
	os.Remove(path)
	dst, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bolt.Compact(dst, src, 0); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// copyFixture copies a fixture file to a temporary one the test may change.
func copyFixture(t *testing.T, path string) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dump lists every key and value of a file: "bucket/nested\tkey\tvalue",
// quoted, in key order.
func dump(t *testing.T, path string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	var walk func(prefix string, b *bolt.Bucket) error
	walk = func(prefix string, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil && b.Bucket(k) != nil {
				return walk(prefix+"/"+string(k), b.Bucket(k))
			}
			out = append(out, fmt.Sprintf("%s\t%q\t%q", prefix, k, v))
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoredDataStillReads: the fixture files written by this and every
// earlier schema open (migrating) and read as the fixture's values.
func TestStoredDataStillReads(t *testing.T) {
	writeFixtureFile(t)
	files, err := filepath.Glob(filepath.Join("testdata", "schema*.db"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, fixturePath(schemaVersion)) {
		t.Fatalf("no fixture file of schema %d among %v (ACS_UPDATE_STORE_FIXTURES=1 writes it)", schemaVersion, files)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := Open(copyFixture(t, path))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			storetest.CheckFixture(t, s)
		})
	}
}

// TestStoredBytesUnchanged: the fixture written now is stored with the
// bytes of the current schema's fixture file, indexes included.
func TestStoredBytesUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acs.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WriteFixture(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.DiffLines(t, "the fixture stored now", dump(t, path), dump(t, fixturePath(schemaVersion)))
}

// TestMigrationsRebuildFixtureIndexes: a copy of the current fixture file
// taken back to the first schema's layout (no derived index entries, no
// schema mark) opens with every index as the fixture file has it: the
// migrations read the stored records as they are stored.
func TestMigrationsRebuildFixtureIndexes(t *testing.T) {
	want := dump(t, fixturePath(schemaVersion))
	path := copyFixture(t, fixturePath(schemaVersion))
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		// Version 1 had owner-index entries without values, and none of
		// the other derived buckets.
		for _, b := range [][]byte{bConvOwner, bTasksOwner} {
			var keys [][]byte
			if err := tx.Bucket(b).ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil }); err != nil {
				return err
			}
			for _, k := range keys {
				if err := tx.Bucket(b).Put(k, nil); err != nil {
					return err
				}
			}
		}
		for _, b := range [][]byte{bTasksUpdated, bTasksOpen, bConvCount, bEventText, bMeta} {
			if err := tx.DeleteBucket(b); err != nil {
				return fmt.Errorf("%s: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.DiffLines(t, "the migrated fixture", dump(t, path), want)
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckFixture(t, s)
}
