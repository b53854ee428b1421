// Package fileblob is the local acs.Blobs: each object is a file under a
// root directory, at the path its key names.
//
// Keys are slash-separated relative paths ("archives/ab12.tar.gz"): at most
// 1024 bytes, segments of 1 to 255 bytes, none "." or "..", no leading slash,
// backslash or NUL, and no segment starting with ".fileblob-tmp-" (reserved
// for writes in progress). Other keys are acs.ErrInvalid.
//
// Put writes to a temporary file in the object's directory, syncs it and
// renames it into place, so readers see the old object or the new one, never
// a partial one. A temporary file left by a crash is never listed or served
// (it only takes space). Several Stores, in one process or several, may share
// a root.
//
// Because objects are files, a key cannot be both an object and a directory
// of other objects: with "a/b" stored, putting "a" (or, with "a" stored,
// putting "a/b") fails with acs.ErrConflict.
package fileblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/acs-project/acs/internal/diskfull"
	"github.com/acs-project/acs/shared/acs"
)

// tmpPrefix starts the names of objects being written. Key segments may not
// start with it, so List never mistakes a write in progress for an object.
const tmpPrefix = ".fileblob-tmp-"

const (
	maxKeyLen     = 1024
	maxSegmentLen = 255
)

// Store is an acs.Blobs over a directory. It is safe for concurrent use.
type Store struct {
	root string
}

var _ acs.Blobs = (*Store)(nil)

// New returns a store over root, creating the directory (mode 0700) if
// needed.
func New(root string) (*Store, error) {
	if root == "" {
		return nil, fmt.Errorf("fileblob: root directory is required: %w", acs.ErrInvalid)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fileblob: root %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("fileblob: create root: %w", err)
	}
	return &Store{root: abs}, nil
}

// validKey checks a key: non-empty, at most 1024 bytes, slash-separated
// segments of 1 to 255 bytes, none of them "." or "..", no leading slash, no
// backslash or NUL, and no segment starting with the reserved prefix
// ".fileblob-tmp-". The error wraps acs.ErrInvalid.
func validKey(key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("fileblob: key %q: %s: %w", truncate(key, 80), err, acs.ErrInvalid)
	}
	return nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty")
	case len(key) > maxKeyLen:
		return fmt.Errorf("longer than %d bytes", maxKeyLen)
	case strings.ContainsAny(key, "\\\x00"):
		return errors.New("contains a backslash or NUL")
	case key[0] == '/':
		return errors.New("absolute")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return errors.New("empty path segment")
		case seg == "." || seg == "..":
			return fmt.Errorf("%q segment", seg)
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("segment longer than %d bytes", maxSegmentLen)
		case strings.HasPrefix(seg, tmpPrefix):
			return fmt.Errorf("segment starts with the reserved %q", tmpPrefix)
		}
	}
	return nil
}

func (s *Store) path(key string) (string, error) {
	if err := validKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put stores the object once r is fully read, replacing any previous one
// atomically. When r fails, ctx ends or the write fails, Put returns the
// error and leaves the previous object (or none) in place. ErrInvalid for a
// bad key; ErrConflict when the key collides with a directory of other keys
// (or a parent segment is an object); ErrStorageFull when the disk or quota
// is full.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) error {
	err := s.put(ctx, key, r)
	if diskfull.Is(err) {
		return fmt.Errorf("%w: %w", err, acs.ErrStorageFull)
	}
	return err
}

func (s *Store) put(ctx context.Context, key string, r io.Reader) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fileblob: put %s: %w", key, err)
	}
	f, err := s.createTemp(filepath.Dir(p))
	if err != nil {
		return fmt.Errorf("fileblob: put %s: %w", key, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		return fmt.Errorf("fileblob: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fileblob: put %s: sync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("fileblob: put %s: close: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		if st, serr := os.Lstat(p); serr == nil && st.IsDir() {
			return fmt.Errorf("fileblob: put %s: the key is a directory of other keys: %w", key, acs.ErrConflict)
		}
		return fmt.Errorf("fileblob: put %s: %w", key, err)
	}
	done = true
	syncDir(filepath.Dir(p))
	return nil
}

// createTemp makes dir and a temporary file in it. A concurrent Delete may
// remove dir (once empty) between the two steps, so it retries.
func (s *Store) createTemp(dir string) (*os.File, error) {
	var err error
	for range 10 {
		if err = os.MkdirAll(dir, 0o700); err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("a parent segment of the key is an object: %w", acs.ErrConflict)
			}
			return nil, err
		}
		var f *os.File
		f, err = os.CreateTemp(dir, tmpPrefix+"*")
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

// Get opens the object for reading; the caller closes it. ErrNotFound when
// absent (including when the key names a directory of other keys),
// ErrInvalid for a bad key.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fileblob: get %s: %w", key, err)
	}
	f, err := os.Open(p)
	if err != nil {
		if notExist(err) {
			return nil, fmt.Errorf("fileblob: object %s: %w", key, acs.ErrNotFound)
		}
		return nil, fmt.Errorf("fileblob: get %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fileblob: get %s: %w", key, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("fileblob: object %s: %w", key, acs.ErrNotFound)
	}
	return f, nil
}

// Delete removes the object (absent is not an error) and then the parent
// directories it leaves empty, up to the root. ErrInvalid for a bad key.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fileblob: delete %s: %w", key, err)
	}
	st, err := os.Lstat(p)
	if err != nil {
		if notExist(err) {
			return nil
		}
		return fmt.Errorf("fileblob: delete %s: %w", key, err)
	}
	if st.IsDir() {
		return nil // a directory of other keys: no object by this name
	}
	if err := os.Remove(p); err != nil && !notExist(err) {
		return fmt.Errorf("fileblob: delete %s: %w", key, err)
	}
	// Prune empty parents; Remove fails (and pruning stops) at the first
	// directory that still holds something.
	for dir := filepath.Dir(p); dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// List returns the keys starting with prefix, sorted bytewise. The prefix
// may end mid-segment ("archives/ab") or be empty (every key). ErrInvalid for
// a prefix no valid key can start with because it breaks the key rules
// (absolute, backslash, NUL, "." or ".." segments, empty segments).
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if prefix != "" {
		// A prefix is valid when some key can start with it.
		if err := checkKey(prefix + "x"); err != nil {
			return nil, fmt.Errorf("fileblob: prefix %q: %s: %w", truncate(prefix, 80), err, acs.ErrInvalid)
		}
	}
	// Walk only the directory the prefix fully names.
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
	}
	start := filepath.Join(s.root, filepath.FromSlash(base))
	keys := []string{}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && notExist(err) {
				return fs.SkipAll
			}
			if notExist(err) {
				return nil // removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p == start {
				return nil
			}
			dirKey := key + "/"
			if !strings.HasPrefix(dirKey, prefix) && !strings.HasPrefix(prefix, dirKey) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fileblob: list %q: %w", truncate(prefix, 80), err)
	}
	sort.Strings(keys)
	return keys, nil
}

func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// syncDir flushes a directory entry (best effort: some systems refuse).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
